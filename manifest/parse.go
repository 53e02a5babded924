package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/text/unicode/norm"
)

// MaxManifestBytes bounds what Read accepts; a manifest of a 1,000-file repository is ~1 MB.
const MaxManifestBytes = 64 << 20

// ReadFile reads and validates a manifest file.
func ReadFile(name string) (*Manifest, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", name, err)
	}
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("%s: manifest larger than %d bytes", name, MaxManifestBytes)
	}
	return Parse(data, name)
}

// Parse validates a manifest document. Errors name the source and the JSON field at fault.
func Parse(data []byte, name string) (*Manifest, error) {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", name, field, fmt.Sprintf(format, args...))
	}
	if err := checkDuplicateKeys(data); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var oci ocispec.Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&oci); err != nil {
		return nil, fmt.Errorf("%s: not a JSON OCI manifest: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: trailing data after the manifest object", name)
	}
	if oci.SchemaVersion != 2 {
		return nil, bad("schemaVersion", "is %d, want 2", oci.SchemaVersion)
	}
	if oci.MediaType != ocispec.MediaTypeImageManifest {
		return nil, bad("mediaType", "is %q, want %q", oci.MediaType, ocispec.MediaTypeImageManifest)
	}
	if oci.ArtifactType != ArtifactType {
		return nil, bad("artifactType", "is %q, want %q (not a ModelPack DR manifest)", oci.ArtifactType, ArtifactType)
	}
	if oci.Config.MediaType != MediaTypeModelConfig {
		return nil, bad("config.mediaType", "is %q, want %q", oci.Config.MediaType, MediaTypeModelConfig)
	}
	if err := checkDescriptorData(oci.Config); err != nil {
		return nil, bad("config", "%v", err)
	}
	m := &Manifest{OCI: oci}
	if v, ok := oci.Annotations[AnnotationParamsByPrecision]; ok {
		if _, err := parseShares(v); err != nil {
			return nil, bad(fmt.Sprintf("annotations[%q]", AnnotationParamsByPrecision), "%v", err)
		}
	}
	if oci.Config.Data == nil {
		return nil, bad("config.data", "missing: the model config must be embedded")
	}
	if err := json.Unmarshal(oci.Config.Data, &m.Model); err != nil {
		return nil, bad("config.data", "model config is not valid JSON: %v", err)
	}
	if len(oci.Layers) == 0 {
		return nil, bad("layers", "empty or missing: a manifest that lists no files proves nothing (truncated?)")
	}
	seen := make(map[string]int, len(oci.Layers))
	for i, l := range oci.Layers {
		field := fmt.Sprintf("layers[%d]", i)
		f, err := layerFile(l)
		if err != nil {
			return nil, bad(field, "%v", err)
		}
		if i > 0 && f.Path < m.Files[i-1].Path {
			return nil, bad(field, "layers are not sorted by path (%q after %q)", f.Path, m.Files[i-1].Path)
		}
		// Paths that are equal once case and Unicode normalisation are folded would land on one
		// file on a case-insensitive or normalising file system (macOS, Windows, some buckets'
		// tools): one of the two layers would silently win.
		k := foldPath(f.Path)
		if j, dup := seen[k]; dup && m.Files[j].Path == f.Path {
			return nil, bad(field, "path %q already listed by layers[%d]", f.Path, j)
		} else if dup {
			return nil, bad(field, "path %q collides with layers[%d] %q (equal ignoring case and Unicode normalisation)", f.Path, j, oci.Layers[j].Annotations[AnnotationFilepath])
		}
		seen[k] = i
		m.Files = append(m.Files, f)
	}
	// A path that is a file and also a directory of another path cannot be restored.
	for i, f := range m.Files {
		for d := f.Path; ; {
			j := strings.LastIndexByte(d, '/')
			if j < 0 {
				break
			}
			d = d[:j]
			if k, clash := seen[foldPath(d)]; clash {
				return nil, bad(fmt.Sprintf("layers[%d]", i), "path %q runs through %q, which layers[%d] lists as a file", f.Path, m.Files[k].Path, k)
			}
		}
	}
	if _, ok := m.File("model/config.json"); !ok {
		return nil, bad("layers", "no model/config.json: not a servable model (truncated manifest?)")
	}
	return m, nil
}

// foldPath is the key two paths collide under: case-folded, NFC-normalised.
func foldPath(p string) string {
	return strings.ToLower(norm.NFC.String(p))
}

// checkDuplicateKeys refuses a JSON document in which an object repeats a key: encoding/json
// keeps the last one silently, so two readers of the same manifest could disagree about it.
func checkDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var walk func(path string) error
	walk = func(path string) error {
		t, err := dec.Token()
		if err != nil {
			return nil // the decoder proper reports syntax errors
		}
		switch t {
		case json.Delim('{'):
			keys := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil
				}
				k, _ := kt.(string)
				if keys[k] {
					return fmt.Errorf("%s: key %q appears twice", joinField(path, k), k)
				}
				keys[k] = true
				if err := walk(joinField(path, k)); err != nil {
					return err
				}
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
			_, _ = dec.Token()
		}
		return nil
	}
	return walk("")
}

func joinField(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// layerFile decodes and checks one layer descriptor.
func layerFile(l ocispec.Descriptor) (File, error) {
	a := l.Annotations
	p, ok := a[AnnotationFilepath]
	if !ok {
		return File{}, fmt.Errorf("annotations[%q] missing", AnnotationFilepath)
	}
	part, err := splitBundlePath(p)
	if err != nil {
		return File{}, fmt.Errorf("annotations[%q]: %v", AnnotationFilepath, err)
	}
	if got := Part(a[AnnotationPart]); got != part {
		return File{}, fmt.Errorf("annotations[%q] is %q, but path %q is in part %q", AnnotationPart, got, p, part)
	}
	role := Role(a[AnnotationRole])
	if role == "" {
		return File{}, fmt.Errorf("annotations[%q] missing for %s", AnnotationRole, p)
	}
	if !role.Known() {
		return File{}, fmt.Errorf("annotations[%q] is %q for %s: not a role Lifeboat knows", AnnotationRole, role, p)
	}
	if l.Data != nil && part == PartModel {
		// Only small model configuration files are embedded; weights and tokenizers come from
		// the replica, and embedded bytes there would be a second, unverified copy.
		if !ModelEmbeddable(p, role) {
			return File{}, fmt.Errorf("data: %s is a model file of role %s, whose bytes are never embedded (they come from the replica)", p, role)
		}
		if len(l.Data) > ModelConfigEmbedLimit {
			return File{}, fmt.Errorf("data: %s embeds %d bytes, more than the %d a model config may", p, len(l.Data), ModelConfigEmbedLimit)
		}
	}
	if l.MediaType == "" {
		return File{}, fmt.Errorf("mediaType missing for %s", p)
	}
	if err := checkDescriptorData(l); err != nil {
		return File{}, fmt.Errorf("%s: %v", p, err)
	}
	f := File{Path: p, Part: part, Role: role, MediaType: l.MediaType, Size: l.Size, Digest: l.Digest, Data: l.Data}
	f.Sums.SHA256 = l.Digest.Encoded()
	for _, c := range []struct {
		key string
		n   int
		dst *string
	}{
		{AnnotationMD5, 16, &f.Sums.MD5},
		{AnnotationCRC32C, 4, &f.Sums.CRC32C},
		{AnnotationCRC64NVME, 8, &f.Sums.CRC64NVME},
		{AnnotationCRC32, 4, &f.Sums.CRC32},
	} {
		v, ok := a[c.key]
		if !ok {
			continue // older or foreign manifests may lack some; verification reports UNVERIFIED then
		}
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(b) != c.n {
			return File{}, fmt.Errorf("%s: annotations[%q] is %q, want base64 of %d bytes", p, c.key, v, c.n)
		}
		*c.dst = v
	}
	return f, nil
}

// checkDescriptorData validates digest, size and, when present, embedded data.
func checkDescriptorData(d ocispec.Descriptor) error {
	// Validate before Algorithm: go-digest's Algorithm panics on a digest without a ':'.
	if err := d.Digest.Validate(); err != nil {
		return fmt.Errorf("digest %q is not sha256:<64 hex>: %v", d.Digest, err)
	}
	if d.Digest.Algorithm() != digest.SHA256 {
		return fmt.Errorf("digest %q is not sha256:<64 hex>", d.Digest)
	}
	if d.Size < 0 {
		return fmt.Errorf("size %d is negative", d.Size)
	}
	if d.Data != nil {
		if int64(len(d.Data)) != d.Size {
			return fmt.Errorf("data is %d bytes but size says %d", len(d.Data), d.Size)
		}
		sum := sha256.Sum256(d.Data)
		if hex.EncodeToString(sum[:]) != d.Digest.Encoded() {
			return fmt.Errorf("data does not match digest %s", d.Digest)
		}
	}
	return nil
}
