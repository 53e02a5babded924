package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/text/unicode/norm"

	"lifeboat/providers/localfile"
)

// MaxManifestBytes bounds what Read accepts; a manifest of a 1,000-file repository is ~1 MB.
const MaxManifestBytes = 64 << 20

// ReadFile reads and validates a manifest file.
func ReadFile(name string) (*Manifest, error) {
	data, err := localfile.ReadFile(name, MaxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
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
	decErr := dec.Decode(&oci)
	// What the decoder consumed is one value whose syntax it checked, even when the value does
	// not unmarshal (a string for a number): a repeated key there is reported first, as the
	// more telling fault. On a syntax error it consumed nothing.
	if err := checkDuplicateKeys(data[:dec.InputOffset()]); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if decErr != nil {
		return nil, fmt.Errorf("%s: not a JSON OCI manifest: %w", name, decErr)
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
// keeps the last one silently, so two readers of the same manifest could disagree about it. Keys
// are compared as the decoder reads them (escapes resolved, invalid UTF-8 as U+FFFD).
//
// data must be syntactically valid JSON (Parse checks it first with the decoder); anything else
// may be judged either way, but never panics. It is one pass over the bytes with no allocation per
// value: the decoder's Token API, which it replaces, cost as much as the whole decode of a
// manifest (a verify reads one on its critical path).
func checkDuplicateKeys(data []byte) error {
	type frame struct {
		object  bool
		wantKey bool     // object: the next string is a key
		key     []byte   // object: the member being read (for the error's path)
		index   int      // array: the element being read
		keys    [][]byte // object: the keys so far, while few
		set     map[string]struct{}
	}
	// Objects with more keys than this are checked with a map; below, a linear scan of a few keys
	// beats hashing them.
	const fewKeys = 16
	var stack []frame
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{', '[':
			if n := len(stack); n < cap(stack) {
				stack = stack[:n+1] // reuse the keys slice of a frame popped before
			} else {
				stack = append(stack, frame{})
			}
			f := &stack[len(stack)-1]
			f.object, f.wantKey, f.key, f.index, f.keys, f.set = data[i] == '{', data[i] == '{', nil, 0, f.keys[:0], nil
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if n := len(stack); n > 0 {
				if f := &stack[n-1]; f.object {
					f.wantKey = true
				} else {
					f.index++
				}
			}
		case '"':
			start := i
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			n := len(stack)
			if n == 0 || !stack[n-1].wantKey || i >= len(data) {
				continue // a string value
			}
			f := &stack[n-1]
			f.wantKey = false
			k := data[start+1 : i]
			if bytes.IndexByte(k, '\\') >= 0 || !utf8.Valid(k) {
				var dec string
				if json.Unmarshal(data[start:i+1], &dec) != nil {
					continue // not valid JSON: the decoder has said so
				}
				k = []byte(dec)
			}
			f.key = k
			dup := false
			if f.set != nil {
				_, dup = f.set[string(k)]
				f.set[string(k)] = struct{}{}
			} else {
				for _, seen := range f.keys {
					if bytes.Equal(seen, k) {
						dup = true
						break
					}
				}
				if f.keys = append(f.keys, k); len(f.keys) > fewKeys {
					f.set = make(map[string]struct{}, 2*len(f.keys))
					for _, seen := range f.keys {
						f.set[string(seen)] = struct{}{}
					}
				}
			}
			if dup {
				path := ""
				for _, g := range stack[:n-1] {
					if g.object {
						path = joinField(path, string(g.key))
					} else {
						path = fmt.Sprintf("%s[%d]", path, g.index)
					}
				}
				return fmt.Errorf("%s: key %q appears twice", joinField(path, string(k)), k)
			}
		}
	}
	return nil
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
	if v, ok := a[AnnotationBLAKE3]; ok {
		// Lower-case only: the value is compared as written, and a manifest is canonical.
		if b, err := hex.DecodeString(v); err != nil || len(b) != 32 || strings.ToLower(v) != v {
			return File{}, fmt.Errorf("%s: annotations[%q] is %q, want 64 lower-case hex digits", p, AnnotationBLAKE3, v)
		}
		f.Sums.BLAKE3 = v
	}
	return f, nil
}

// isSHA256Digest reports whether d is "sha256:" and 64 lowercase hex digits: exactly the sha256
// digests go-digest's Validate accepts.
func isSHA256Digest(d digest.Digest) bool {
	hexPart, ok := strings.CutPrefix(string(d), "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	for i := 0; i < len(hexPart); i++ {
		if c := hexPart[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// checkDescriptorData validates digest, size and, when present, embedded data.
func checkDescriptorData(d ocispec.Descriptor) error {
	// The usual case is told at once; go-digest's Validate (two regular expressions, a tenth of
	// the parse of a manifest) then only runs to say what is wrong with another.
	if !isSHA256Digest(d.Digest) {
		// Validate before Algorithm: go-digest's Algorithm panics on a digest without a ':'.
		if err := d.Digest.Validate(); err != nil {
			return fmt.Errorf("digest %q is not sha256:<64 hex>: %v", d.Digest, err)
		}
		if d.Digest.Algorithm() != digest.SHA256 {
			return fmt.Errorf("digest %q is not sha256:<64 hex>", d.Digest)
		}
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
