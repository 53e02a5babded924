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

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
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
	if oci.Config.Data == nil {
		return nil, bad("config.data", "missing: the model config must be embedded")
	}
	if err := json.Unmarshal(oci.Config.Data, &m.Model); err != nil {
		return nil, bad("config.data", "model config is not valid JSON: %v", err)
	}
	seen := make(map[string]int, len(oci.Layers))
	for i, l := range oci.Layers {
		field := fmt.Sprintf("layers[%d]", i)
		f, err := layerFile(l)
		if err != nil {
			return nil, bad(field, "%v", err)
		}
		if j, dup := seen[f.Path]; dup {
			return nil, bad(field, "path %q already listed by layers[%d]", f.Path, j)
		}
		if i > 0 && f.Path < m.Files[i-1].Path {
			return nil, bad(field, "layers are not sorted by path (%q after %q)", f.Path, m.Files[i-1].Path)
		}
		seen[f.Path] = i
		m.Files = append(m.Files, f)
	}
	return m, nil
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
	if d.Digest.Algorithm() != digest.SHA256 {
		return fmt.Errorf("digest %q is not sha256:<64 hex>", d.Digest)
	}
	if err := d.Digest.Validate(); err != nil {
		return fmt.Errorf("digest %q: %v", d.Digest, err)
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
