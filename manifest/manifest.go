package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"lifeboat/providers"
	"lifeboat/providers/checksum"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Media types. The ModelPack ones come from the CNCF model-spec; the lifeboat ones are ours and
// documented in docs/manifest.md.
const (
	ArtifactType          = "application/vnd.cncf.model.manifest.v1+json"
	MediaTypeModelConfig  = "application/vnd.cncf.model.config.v1+json"
	MediaTypeWeight       = "application/vnd.cncf.model.weight.v1.raw"
	MediaTypeWeightConfig = "application/vnd.cncf.model.weight.config.v1.raw"
	MediaTypeDoc          = "application/vnd.cncf.model.doc.v1.raw"
	MediaTypeCode         = "application/vnd.cncf.model.code.v1.raw"
	MediaTypeEngineConfig = "application/vnd.lifeboat.engine.config.v1.raw"
	MediaTypeDeployment   = "application/vnd.lifeboat.deployment.v1.raw"
)

// Annotation keys carried by every layer descriptor.
const (
	AnnotationFilepath  = "org.cncf.model.filepath"
	AnnotationPart      = "dev.lifeboat.part"
	AnnotationRole      = "dev.lifeboat.role"
	AnnotationCRC32C    = "dev.lifeboat.checksum.crc32c"    // base64 of big-endian uint32, as GCS and S3 report it
	AnnotationCRC64NVME = "dev.lifeboat.checksum.crc64nvme" // base64 of big-endian uint64, as S3 reports it
	AnnotationCRC32     = "dev.lifeboat.checksum.crc32"     // base64 of big-endian uint32 (IEEE), the S3 SDK's default
	AnnotationMD5       = "dev.lifeboat.checksum.md5"       // base64 of the 16 bytes, as Azure Content-MD5 and GCS md5Hash
	// AnnotationBLAKE3 is the BLAKE3-256 of the file in lower-case hex, as b3sum prints it. No
	// store reports it; deep verification re-hashes with it, ~2.7× faster per core than
	// SHA-256 and as collision-resistant (SHA-256 stays the layer digest and the OCI identity).
	AnnotationBLAKE3 = "dev.lifeboat.checksum.blake3"
	// AnnotationName is the manifest-level name given with --name.
	AnnotationName = "org.opencontainers.image.title"
	// AnnotationTitle, on a layer, is the file name an OCI client (oras pull, an image volume)
	// writes the layer to: for a model file its path in the model repository (model/ dropped),
	// for an engine or deployment file its bundle path (engine/…, deploy/…). `oras pull` of a
	// pushed DR manifest therefore yields the model repository, loadable as is, with engine/
	// and deploy/ beside it. Lifeboat itself keys files by AnnotationFilepath.
	AnnotationTitle = "org.opencontainers.image.title"
	// AnnotationCreated is set only when the builder is asked for a timestamp.
	AnnotationCreated = "org.opencontainers.image.created"
)

// Part is the section of the DR bundle a file belongs to; it is also the bundle path's first element.
type Part string

const (
	PartModel      Part = "model"
	PartEngine     Part = "engine"
	PartDeployment Part = "deployment"
)

// Prefix returns the bundle directory of a part: model/, engine/ or deploy/.
func (p Part) Prefix() string {
	switch p {
	case PartModel:
		return "model/"
	case PartEngine:
		return "engine/"
	case PartDeployment:
		return "deploy/"
	}
	return ""
}

// Role says what a file does for a replica.
type Role string

const (
	RoleWeights          Role = "weights"
	RoleWeightIndex      Role = "weight-index"
	RoleModelConfig      Role = "model-config"
	RoleTokenizer        Role = "tokenizer"
	RoleTokenizerConfig  Role = "tokenizer-config"
	RoleChatTemplate     Role = "chat-template"
	RoleGenerationConfig Role = "generation-config"
	RoleQuantConfig      Role = "quant-config"
	RoleLoRAAdapter      Role = "lora-adapter"
	RoleRemoteCode       Role = "remote-code"
	RoleDoc              Role = "doc"
	RoleOther            Role = "other"
	RoleEngineConfig     Role = "engine-config"
	RoleDeployment       Role = "deployment"
)

// Known reports whether r is one of the roles above.
func (r Role) Known() bool {
	switch r {
	case RoleWeights, RoleWeightIndex, RoleModelConfig, RoleTokenizer, RoleTokenizerConfig,
		RoleChatTemplate, RoleGenerationConfig, RoleQuantConfig, RoleLoRAAdapter, RoleRemoteCode,
		RoleDoc, RoleOther, RoleEngineConfig, RoleDeployment:
		return true
	}
	return false
}

// MediaType is the layer media type used for files of this role.
func (r Role) MediaType() string {
	switch r {
	case RoleWeights:
		return MediaTypeWeight
	case RoleDoc:
		return MediaTypeDoc
	case RoleRemoteCode:
		return MediaTypeCode
	case RoleEngineConfig:
		return MediaTypeEngineConfig
	case RoleDeployment:
		return MediaTypeDeployment
	}
	return MediaTypeWeightConfig
}

// Checksums are the provider-comparable digests of one file, each in the encoding the provider
// reports it in (see package checksum), so that quick verification compares them as strings.
type Checksums = checksum.Sums

// File is one layer of the manifest seen as a file of the DR bundle.
type File struct {
	Path      string // bundle path: model/…, engine/…, deploy/…
	Part      Part
	Role      Role
	MediaType string
	Size      int64
	Digest    digest.Digest
	Sums      Checksums
	Data      []byte // embedded content (engine and small deployment files), else nil
}

// ModelConfig is the ModelPack model configuration embedded in the config descriptor.
type ModelConfig struct {
	Descriptor ModelDescriptor `json:"descriptor"`
	Config     ModelSpec       `json:"config"`
	ModelFS    ModelFS         `json:"modelfs"`
}

// ModelDescriptor is ModelPack's general information block.
type ModelDescriptor struct {
	CreatedAt string `json:"createdAt,omitempty"`
	Family    string `json:"family,omitempty"`
	Name      string `json:"name,omitempty"`
	Revision  string `json:"revision,omitempty"`
}

// ModelSpec is ModelPack's technical metadata block.
type ModelSpec struct {
	Architecture string `json:"architecture,omitempty"`
	Format       string `json:"format,omitempty"`
	ParamSize    string `json:"paramSize,omitempty"`
	Precision    string `json:"precision,omitempty"`
	Quantization string `json:"quantization,omitempty"`
}

// ModelFS lists the layer digests in order, as ModelPack requires.
type ModelFS struct {
	Type    string          `json:"type"`
	DiffIDs []digest.Digest `json:"diff_ids"`
}

// Manifest is a parsed DR manifest: the OCI document plus its layers decoded as bundle files.
type Manifest struct {
	OCI   ocispec.Manifest
	Model ModelConfig
	Files []File // sorted by Path
}

// Name is the manifest's --name, or "".
func (m *Manifest) Name() string { return m.OCI.Annotations[AnnotationName] }

// File returns the file at a bundle path.
func (m *Manifest) File(path string) (File, bool) {
	i := sort.Search(len(m.Files), func(i int) bool { return m.Files[i].Path >= path })
	if i < len(m.Files) && m.Files[i].Path == path {
		return m.Files[i], true
	}
	return File{}, false
}

// PartFiles returns the files of one part, in path order.
func (m *Manifest) PartFiles(p Part) []File {
	var out []File
	for _, f := range m.Files {
		if f.Part == p {
			out = append(out, f)
		}
	}
	return out
}

// Marshal renders the manifest as indented JSON with a trailing newline. Layer order and
// annotation order are fixed, so equal inputs give byte-identical output.
func (m *Manifest) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m.OCI); err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	return buf.Bytes(), nil
}

// assemble builds the OCI document from files, the model config and the manifest's annotations.
func assemble(ann map[string]string, mc ModelConfig, files []File) (*Manifest, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	mc.ModelFS = ModelFS{Type: "layers", DiffIDs: make([]digest.Digest, 0, len(files))}
	layers := make([]ocispec.Descriptor, 0, len(files))
	titles := make(map[string]bool, len(files))
	for _, f := range files {
		if f.Part == PartModel {
			titles[LayerTitle(f.Path)] = true
		}
	}
	for _, f := range files {
		mc.ModelFS.DiffIDs = append(mc.ModelFS.DiffIDs, f.Digest)
		ann := map[string]string{
			AnnotationFilepath:  f.Path,
			AnnotationPart:      string(f.Part),
			AnnotationRole:      string(f.Role),
			AnnotationMD5:       f.Sums.MD5,
			AnnotationCRC32C:    f.Sums.CRC32C,
			AnnotationCRC64NVME: f.Sums.CRC64NVME,
			AnnotationCRC32:     f.Sums.CRC32,
		}
		if f.Sums.BLAKE3 != "" {
			ann[AnnotationBLAKE3] = f.Sums.BLAKE3
		}
		// An engine or deployment file whose bundle path is also a model file's path in its
		// repository (a model repository with an engine/ or deploy/ directory) gets no title:
		// two layers with one title would make an OCI client refuse the pull.
		if t := LayerTitle(f.Path); f.Part == PartModel || !titles[t] {
			ann[AnnotationTitle] = t
		}
		layers = append(layers, ocispec.Descriptor{
			MediaType:   f.MediaType,
			Digest:      f.Digest,
			Size:        f.Size,
			Annotations: ann,
			Data:        f.Data,
		})
	}
	cfg, err := json.Marshal(mc)
	if err != nil {
		return nil, fmt.Errorf("encode model config: %w", err)
	}
	if len(ann) == 0 {
		ann = nil
	}
	oci := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Config: ocispec.Descriptor{
			MediaType: MediaTypeModelConfig,
			Digest:    digest.FromBytes(cfg),
			Size:      int64(len(cfg)),
			Data:      cfg,
		},
		Layers:      layers,
		Annotations: ann,
	}
	return &Manifest{OCI: oci, Model: mc, Files: files}, nil
}

// LayerTitle is the org.opencontainers.image.title of the layer holding the file at bundle path
// p (providers.LayerTitle: the registry store reads titles back with the inverse rule).
func LayerTitle(p string) string { return providers.LayerTitle(p) }

// splitBundlePath returns the part a bundle path belongs to, or an error if it is not a clean
// relative path under model/, engine/ or deploy/.
func splitBundlePath(p string) (Part, error) {
	if err := checkRelPath(p); err != nil {
		return "", err
	}
	switch {
	case strings.HasPrefix(p, "model/"):
		return PartModel, nil
	case strings.HasPrefix(p, "engine/"):
		return PartEngine, nil
	case strings.HasPrefix(p, "deploy/"):
		return PartDeployment, nil
	}
	return "", fmt.Errorf("%q is not under model/, engine/ or deploy/", p)
}

// checkRelPath rejects absolute paths, "..", ".", empty elements, backslashes, invalid UTF-8 and
// control and format characters (C0, DEL, C1, bidi overrides: they forge lines, escape sequences
// and reordered text in output).
func checkRelPath(p string) error {
	if p == "" {
		return fmt.Errorf("empty path")
	}
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q is absolute", p)
	}
	if strings.ContainsAny(p, "\\\x00") {
		return fmt.Errorf("%q contains a backslash or NUL", p)
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("%q is not valid UTF-8", p)
	}
	for _, r := range p {
		if r == utf8.RuneError { // what encoding/json decodes invalid UTF-8 to
			return fmt.Errorf("%q is not valid UTF-8", p)
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("%q contains the control or format character %U", p, r)
		}
	}
	for _, el := range strings.Split(p, "/") {
		switch el {
		case "":
			return fmt.Errorf("%q has an empty path element", p)
		case ".", "..":
			return fmt.Errorf("%q contains %q", p, el)
		}
	}
	return nil
}
