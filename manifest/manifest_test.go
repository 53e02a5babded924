package manifest_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/crc32"
	"hash/crc64"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/image-spec/schema"
	"lukechampine.com/blake3"

	"lifeboat/internal/sample"
	"lifeboat/manifest"
)

func genSample(t testing.TB, o sample.Options) *sample.Layout {
	t.Helper()
	l, err := sample.Generate(context.Background(), t.TempDir(), o)
	if err != nil {
		t.Fatalf("generate sample: %v", err)
	}
	return l
}

func build(t testing.TB, l *sample.Layout) (*manifest.Manifest, []byte) {
	t.Helper()
	m, err := manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: l.ModelDir, EngineFile: l.EngineFile, DeployPaths: []string{l.DeployDir}, Name: "demo"})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return m, data
}

func TestBuildIsValidOCIManifest(t *testing.T) {
	l := genSample(t, sample.Options{})
	m, data := build(t, l)
	if err := schema.ValidatorMediaTypeManifest.Validate(bytes.NewReader(data)); err != nil {
		t.Fatalf("not a valid OCI image manifest: %v\n%s", err, data)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["artifactType"] != manifest.ArtifactType {
		t.Errorf("artifactType = %v", doc["artifactType"])
	}
	// Every file of the three parts is present with the right bundle path, part and role.
	want := map[string]manifest.Role{
		"model/config.json":                              manifest.RoleModelConfig,
		"model/tokenizer.json":                           manifest.RoleTokenizer,
		"model/tokenizer_config.json":                    manifest.RoleTokenizerConfig,
		"model/generation_config.json":                   manifest.RoleGenerationConfig,
		"model/model-00001-of-00002.safetensors":         manifest.RoleWeights,
		"model/model.safetensors.index.json":             manifest.RoleWeightIndex,
		"model/loras/sql-lora/adapter_config.json":       manifest.RoleLoRAAdapter,
		"model/loras/sql-lora/adapter_model.safetensors": manifest.RoleLoRAAdapter,
		"engine/engine.yaml":                             manifest.RoleEngineConfig,
		"deploy/deployment.yaml":                         manifest.RoleDeployment,
		"deploy/Dockerfile":                              manifest.RoleDeployment,
	}
	for p, role := range want {
		f, ok := m.File(p)
		if !ok {
			t.Errorf("manifest lacks %s", p)
			continue
		}
		if f.Role != role {
			t.Errorf("%s: role %s, want %s", p, f.Role, role)
		}
	}
	w, _ := m.File("model/model-00001-of-00002.safetensors")
	if w.MediaType != manifest.MediaTypeWeight {
		t.Errorf("weights media type %s", w.MediaType)
	}
	e, _ := m.File("engine/engine.yaml")
	if e.MediaType != manifest.MediaTypeEngineConfig || e.Data == nil {
		t.Errorf("engine config: media type %s, embedded %v", e.MediaType, e.Data != nil)
	}
	if m.Model.Config.Format != "safetensors" || m.Model.Config.Precision != "bf16" || m.Model.Config.ParamSize == "" {
		t.Errorf("model config not derived: %+v", m.Model.Config)
	}
	// Round trip through the validating reader.
	back, err := manifest.Parse(data, "m.json")
	if err != nil {
		t.Fatalf("parse own output: %v", err)
	}
	if len(back.Files) != len(m.Files) {
		t.Fatalf("round trip: %d files, want %d", len(back.Files), len(m.Files))
	}
}

func TestBuildAWQModelConfig(t *testing.T) {
	l := genSample(t, sample.Options{Quant: "awq"})
	m, _ := build(t, l)
	if m.Model.Config.Quantization != "awq" || m.Model.Config.Precision != "fp16" {
		t.Fatalf("AWQ model config: %+v", m.Model.Config)
	}
}

// Every digest must equal an independent computation over the file's bytes.
func TestBuildDigestsMatchIndependentHashes(t *testing.T) {
	l := genSample(t, sample.Options{})
	m, _ := build(t, l)
	nvme := crc64.MakeTable(0x9a6c9329ac4bc9b5) // CRC-64/NVME, reflected polynomial
	for _, f := range m.PartFiles(manifest.PartModel) {
		data, err := os.ReadFile(filepath.Join(l.ModelDir, strings.TrimPrefix(f.Path, "model/")))
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(data)
		md := md5.Sum(data)
		var c4, c8 = make([]byte, 4), make([]byte, 8)
		binary.BigEndian.PutUint32(c4, crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
		crc32c := base64.StdEncoding.EncodeToString(c4)
		binary.BigEndian.PutUint32(c4, crc32.ChecksumIEEE(data))
		crc := base64.StdEncoding.EncodeToString(c4)
		binary.BigEndian.PutUint64(c8, crc64.Checksum(data, nvme))
		c64 := base64.StdEncoding.EncodeToString(c8)
		if f.Sums.SHA256 != hex.EncodeToString(s[:]) || f.Digest.Encoded() != f.Sums.SHA256 {
			t.Errorf("%s: sha256 mismatch", f.Path)
		}
		if f.Sums.MD5 != base64.StdEncoding.EncodeToString(md[:]) {
			t.Errorf("%s: md5 mismatch", f.Path)
		}
		if f.Sums.CRC32C != crc32c || f.Sums.CRC32 != crc || f.Sums.CRC64NVME != c64 {
			t.Errorf("%s: crc mismatch: %s/%s %s/%s %s/%s", f.Path, f.Sums.CRC32C, crc32c, f.Sums.CRC32, crc, f.Sums.CRC64NVME, c64)
		}
		if b3 := blake3.Sum256(data); f.Sums.BLAKE3 != hex.EncodeToString(b3[:]) {
			t.Errorf("%s: blake3 mismatch", f.Path)
		}
		if f.Size != int64(len(data)) {
			t.Errorf("%s: size %d, want %d", f.Path, f.Size, len(data))
		}
	}
}

// The CRC-64/NVME check value from the catalogue of parametrised CRCs.
func TestCRC64NVMECheckValue(t *testing.T) {
	got := manifest.ChecksumsOf([]byte("123456789")).CRC64NVME
	b, _ := base64.StdEncoding.DecodeString(got)
	if v := binary.BigEndian.Uint64(b); v != 0xae8b14860a799888 {
		t.Fatalf("CRC-64/NVME(123456789) = %#x, want 0xae8b14860a799888", v)
	}
}

// HashReader and ChecksumsOf agree for many random sizes around chunk boundaries.
func TestHashReaderProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 1<<20 - 1, 1 << 20, 1<<20 + 1, 3<<20 + 17}
	for range 20 {
		sizes = append(sizes, r.IntN(5<<20))
	}
	for _, n := range sizes {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		var progressed int64
		got, total, err := manifest.HashReader(context.Background(), iotestHalf{bytes.NewReader(data)}, func(k int64) { progressed += k })
		if err != nil {
			t.Fatal(err)
		}
		if want := manifest.ChecksumsOf(data); got != want || total != int64(n) || progressed != int64(n) {
			t.Fatalf("size %d: got %+v (total %d, progress %d), want %+v", n, got, total, progressed, want)
		}
	}
}

// iotestHalf returns short reads, to exercise the read loop.
type iotestHalf struct{ r *bytes.Reader }

func (h iotestHalf) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:len(p)/2+1]
	}
	return h.r.Read(p)
}

func TestHashReaderCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := manifest.HashReader(ctx, bytes.NewReader(make([]byte, 4<<20)), nil)
	if err == nil {
		t.Fatal("cancelled hash returned no error")
	}
}

func TestBuildDeterministic(t *testing.T) {
	l := genSample(t, sample.Options{})
	_, a := build(t, l)
	// Touch every file's mtime and rebuild with a different parallelism: same bytes.
	later := time.Now().Add(time.Hour)
	filepath.Walk(l.Root, func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, later, later) })
	m2, err := manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: l.ModelDir, EngineFile: l.EngineFile, DeployPaths: []string{l.DeployDir}, Name: "demo", Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := m2.Marshal()
	if !bytes.Equal(a, b) {
		t.Fatal("same inputs gave different manifests")
	}
	if bytes.Contains(a, []byte(manifest.AnnotationCreated)) {
		t.Fatal("timestamp written without being asked for")
	}
	m3, _ := manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: l.ModelDir, Created: time.Unix(0, 0)})
	c, _ := m3.Marshal()
	if !bytes.Contains(c, []byte(`"org.opencontainers.image.created": "1970-01-01T00:00:00Z"`)) {
		t.Fatal("timestamp missing when asked for")
	}
}

func TestBuildRefusesUnsafeInputs(t *testing.T) {
	cases := map[string]func(t *testing.T, model string) string{
		"symlink leaving the root": func(t *testing.T, model string) string {
			outside := filepath.Join(t.TempDir(), "secret")
			os.WriteFile(outside, []byte("x"), 0o644)
			must(t, os.Symlink(outside, filepath.Join(model, "tokenizer.model")))
			return "outside the model root"
		},
		"relative symlink with ..": func(t *testing.T, model string) string {
			must(t, os.Symlink("../../etc/passwd", filepath.Join(model, "evil.json")))
			return "evil.json"
		},
		"symlinked directory": func(t *testing.T, model string) string {
			must(t, os.Symlink(filepath.Join(model, "loras"), filepath.Join(model, "loras2")))
			return "symlinked directory"
		},
		"named pipe": func(t *testing.T, model string) string {
			must(t, syscall.Mkfifo(filepath.Join(model, "pipe"), 0o644))
			return "special file"
		},
		"broken symlink": func(t *testing.T, model string) string {
			must(t, os.Symlink("nowhere", filepath.Join(model, "dangling")))
			return "broken symlink"
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			l := genSample(t, sample.Options{NoLoRA: name != "symlinked directory"})
			want := setup(t, l.ModelDir)
			_, err := manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: l.ModelDir})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want one mentioning %q", err, want)
			}
		})
	}
}

func TestBuildFollowsSymlinkInsideRoot(t *testing.T) {
	l := genSample(t, sample.Options{NoLoRA: true})
	must(t, os.Rename(filepath.Join(l.ModelDir, "README.md"), filepath.Join(l.ModelDir, "card.md")))
	must(t, os.Symlink("card.md", filepath.Join(l.ModelDir, "README.md")))
	m, err := manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: l.ModelDir})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.File("model/README.md")
	b, _ := m.File("model/card.md")
	if a.Digest != b.Digest || a.Size == 0 {
		t.Fatalf("symlinked file not captured by content: %+v %+v", a, b)
	}
}

func TestBuildSkipsGitMetadataAndRejectsCollisions(t *testing.T) {
	l := genSample(t, sample.Options{NoLoRA: true})
	must(t, os.MkdirAll(filepath.Join(l.ModelDir, ".git", "lfs"), 0o755))
	must(t, os.WriteFile(filepath.Join(l.ModelDir, ".git", "lfs", "obj"), []byte("x"), 0o644))
	m, err := manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: l.ModelDir})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Files {
		if strings.Contains(f.Path, ".git/") {
			t.Fatalf("git metadata captured: %s", f.Path)
		}
	}
	other := filepath.Join(t.TempDir(), "Dockerfile")
	must(t, os.WriteFile(other, []byte("FROM scratch\n"), 0o644))
	_, err = manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: l.ModelDir, DeployPaths: []string{l.DeployDir, other}})
	if err == nil || !strings.Contains(err.Error(), "deploy/Dockerfile") {
		t.Fatalf("collision not refused: %v", err)
	}
	_, err = manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: filepath.Join(l.Root, "nope")})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("missing model dir: %v", err)
	}
}

func TestParseRejectsMalformed(t *testing.T) {
	l := genSample(t, sample.Options{NoLoRA: true})
	_, good := build(t, l)
	mutate := func(f func(doc map[string]any)) []byte {
		var doc map[string]any
		json.Unmarshal(good, &doc)
		f(doc)
		b, _ := json.Marshal(doc)
		return b
	}
	layer := func(doc map[string]any, i int) map[string]any {
		return doc["layers"].([]any)[i].(map[string]any)
	}
	ann := func(doc map[string]any, i int) map[string]any { return layer(doc, i)["annotations"].(map[string]any) }
	cases := map[string]struct {
		data []byte
		want string
	}{
		"not json":        {[]byte("{"), "not a JSON OCI manifest"},
		"trailing":        {append(append([]byte{}, good...), []byte("{}")...), "trailing data"},
		"schema version":  {mutate(func(d map[string]any) { d["schemaVersion"] = 1 }), "schemaVersion"},
		"artifact type":   {mutate(func(d map[string]any) { d["artifactType"] = "x" }), "artifactType"},
		"config media":    {mutate(func(d map[string]any) { d["config"].(map[string]any)["mediaType"] = "x" }), "config.mediaType"},
		"bad digest":      {mutate(func(d map[string]any) { layer(d, 0)["digest"] = "sha256:zz" }), "layers[0]"},
		"md5 length":      {mutate(func(d map[string]any) { ann(d, 0)[manifest.AnnotationMD5] = "AAAA" }), manifest.AnnotationMD5},
		"blake3 length":   {mutate(func(d map[string]any) { ann(d, 0)[manifest.AnnotationBLAKE3] = "abcd" }), manifest.AnnotationBLAKE3},
		"blake3 upper":    {mutate(func(d map[string]any) { ann(d, 0)[manifest.AnnotationBLAKE3] = strings.Repeat("AB", 32) }), manifest.AnnotationBLAKE3},
		"dotdot path":     {mutate(func(d map[string]any) { ann(d, 1)[manifest.AnnotationFilepath] = "model/../etc/passwd" }), `contains ".."`},
		"absolute path":   {mutate(func(d map[string]any) { ann(d, 1)[manifest.AnnotationFilepath] = "/etc/passwd" }), "absolute"},
		"outside parts":   {mutate(func(d map[string]any) { ann(d, 1)[manifest.AnnotationFilepath] = "other/x" }), "not under model/"},
		"part mismatch":   {mutate(func(d map[string]any) { ann(d, 0)[manifest.AnnotationPart] = "model" }), manifest.AnnotationPart},
		"no path":         {mutate(func(d map[string]any) { delete(ann(d, 0), manifest.AnnotationFilepath) }), "missing"},
		"embedded tamper": {mutate(func(d map[string]any) { layer(d, 0)["data"] = base64.StdEncoding.EncodeToString([]byte("FROM evil\n")) }), "data is"},
		"negative size":   {mutate(func(d map[string]any) { layer(d, 2)["size"] = -1 }), "negative"},
		"duplicate path": {mutate(func(d map[string]any) {
			d["layers"] = append(d["layers"].([]any), layer(d, len(d["layers"].([]any))-1))
		}), "already listed"},
		"config not json": {mutate(func(d map[string]any) {
			c := d["config"].(map[string]any)
			c["data"] = "eyJ9"
			c["size"] = 3
			c["digest"] = "sha256:" + hexSHA([]byte(`{"}`))
		}), "config.data"},
		"unsorted layers": {mutate(func(d map[string]any) { ls := d["layers"].([]any); ls[0], ls[len(ls)-1] = ls[len(ls)-1], ls[0] }), "not sorted"},
		"empty document":  {[]byte(""), "not a JSON OCI manifest"},
		// A malformed token inside an object once made the duplicate-key check ask for the
		// same token forever (found by FuzzParse; its input is in testdata/fuzz).
		"unterminated nested string": {[]byte(`{"layers":[{"annotations":{"a":"b`), "not a JSON OCI manifest"},
		"json array":                 {[]byte("[]"), "not a JSON OCI manifest"},
		"layer media type":           {mutate(func(d map[string]any) { delete(layer(d, 3), "mediaType") }), "mediaType"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := manifest.Parse(c.data, "dr/manifest.json")
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "dr/manifest.json") {
				t.Fatalf("error %q does not name the file and %q", err, c.want)
			}
		})
	}
}

func hexSHA(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestDiff(t *testing.T) {
	l := genSample(t, sample.Options{})
	old, _ := build(t, l)
	must(t, os.Remove(filepath.Join(l.ModelDir, "README.md")))
	must(t, os.WriteFile(filepath.Join(l.ModelDir, "chat_template.jinja"), []byte("{{ messages }}"), 0o644))
	must(t, os.WriteFile(filepath.Join(l.ModelDir, "generation_config.json"), []byte(`{"temperature": 0.1}`), 0o644))
	cur, _ := build(t, l)
	d := manifest.Diff(old, cur)
	got := map[string]string{}
	for _, c := range d.Changes {
		got[c.Path] = c.Kind
	}
	want := map[string]string{"model/README.md": "removed", "model/chat_template.jinja": "added", "model/generation_config.json": "changed"}
	if len(got) != len(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	for p, k := range want {
		if got[p] != k {
			t.Errorf("%s: %q, want %q", p, got[p], k)
		}
	}
	if d.Added != 1 || d.Removed != 1 || d.Changed != 1 || d.Unchanged != len(old.Files)-2 {
		t.Errorf("counts %+v", d)
	}
	if !manifest.Diff(cur, cur).Empty() {
		t.Error("a manifest differs from itself")
	}
}

func TestSummarize(t *testing.T) {
	l := genSample(t, sample.Options{})
	m, _ := build(t, l)
	s := m.Summarize()
	var files int
	var bytes int64
	for _, g := range s.Groups {
		files += g.Files
		bytes += g.Bytes
	}
	if files != len(m.Files) || files != s.Files || bytes != s.Bytes || s.Name != "demo" {
		t.Fatalf("summary does not add up: %+v", s)
	}
	if s.Groups[0].Part != manifest.PartModel || s.Groups[0].Role != manifest.RoleWeights {
		t.Fatalf("largest model group first, got %+v", s.Groups[0])
	}
}

func TestClassify(t *testing.T) {
	adapters := map[string]bool{"loras/a": true}
	for p, want := range map[string]manifest.Role{
		"config.json":                       manifest.RoleModelConfig,
		"sub/config.json":                   manifest.RoleOther,
		"tokenizer.model":                   manifest.RoleTokenizer,
		"vocab.json":                        manifest.RoleTokenizer,
		"merges.txt":                        manifest.RoleTokenizer,
		"chat_template.jinja":               manifest.RoleChatTemplate,
		"quantize_config.json":              manifest.RoleQuantConfig,
		"hf_quant_config.json":              manifest.RoleQuantConfig,
		"pytorch_model-00001-of-00002.bin":  manifest.RoleWeights,
		"loras/a/adapter_model.safetensors": manifest.RoleLoRAAdapter,
		"loras/a/adapter_config.json":       manifest.RoleLoRAAdapter,
		"loras/b/adapter_model.safetensors": manifest.RoleWeights,
		"modeling_custom.py":                manifest.RoleRemoteCode,
		"LICENSE":                           manifest.RoleDoc,
		"model.safetensors.index.json":      manifest.RoleWeightIndex,
		"generation_config.json":            manifest.RoleGenerationConfig,
		"preprocessor_config.json":          manifest.RoleOther,
		"special_tokens_map.json":           manifest.RoleTokenizerConfig,
	} {
		if got := manifest.Classify(p, adapters); got != want {
			t.Errorf("Classify(%q) = %s, want %s", p, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A reader that fails with io.ErrUnexpectedEOF (a truncated network body) must fail the hash,
// not end it as if the content were complete.
func TestHashReaderTruncatedBody(t *testing.T) {
	r := io.MultiReader(bytes.NewReader(make([]byte, 3<<20+5)), errReader{io.ErrUnexpectedEOF})
	if _, _, err := manifest.HashReader(context.Background(), r, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// Every layer carries the name an OCI client writes it to: a model file its path in the model
// repository, an engine or deployment file its bundle path — except when a model repository
// has a file at that same path (one title twice would make `oras pull` refuse), where the
// model file keeps the title and the other goes without.
func TestBuildLayerTitles(t *testing.T) {
	l := genSample(t, sample.Options{NoLoRA: true})
	must(t, os.MkdirAll(filepath.Join(l.ModelDir, "engine"), 0o755))
	must(t, os.WriteFile(filepath.Join(l.ModelDir, "engine", filepath.Base(l.EngineFile)), []byte("a model's own file\n"), 0o644))
	m, err := manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: l.ModelDir, EngineFile: l.EngineFile, DeployPaths: []string{l.DeployDir}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	untitled := 0
	for _, layer := range m.OCI.Layers {
		p := layer.Annotations[manifest.AnnotationFilepath]
		title, ok := layer.Annotations[manifest.AnnotationTitle]
		switch {
		case strings.HasPrefix(p, "model/"):
			if title != strings.TrimPrefix(p, "model/") {
				t.Errorf("%s: title %q", p, title)
			}
		case p == "engine/"+filepath.Base(l.EngineFile):
			if ok {
				t.Errorf("%s: titled %q, the title of a model file", p, title)
			}
			untitled++
		default:
			if title != p {
				t.Errorf("%s: title %q", p, title)
			}
		}
		if ok {
			if other, dup := seen[title]; dup {
				t.Errorf("title %q on %s and %s", title, other, p)
			}
			seen[title] = p
		}
	}
	if untitled != 1 {
		t.Fatalf("%d layers without a title, want the engine config's alone", untitled)
	}
}
