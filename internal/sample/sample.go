package sample

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"lifeboat/providers"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// Defaults and fixed facts of the generated repository.
const (
	DefaultModelName  = "lifeboat/Llama-3.1-8B-Instruct-demo"
	DefaultServedName = "llama-demo"
	LoRAName          = "sql-lora" // the adapter's directory and served name
	LoRARank          = 8
	ModelsMount       = "/models"               // where the deployment mounts model directories
	EngineConfigPath  = "/etc/vllm/engine.yaml" // where the deployment mounts engine.yaml

	maxPositionEmbeddings = 131072
	transformersVersion   = "4.46.3"
	// ImageDigest pins vllm/vllm-openai in the deployment and Dockerfile. It is a placeholder
	// (well-formed, deterministic), not the digest of a published image.
	ImageDigest = "sha256:5f1c1c9d1b7e0a3d4c2b8e6f7a9d0c1b2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b"
)

// ErrDirNotEmpty is returned when the target directory already holds files.
var ErrDirNotEmpty = errors.New("sample: directory is not empty")

// Options select the generated repository. Zero values take the defaults in the comments.
type Options struct {
	ModelName    string // HF-style identity, default DefaultModelName; config.json "_name_or_path" and the adapter's base model
	ServedName   string // engine served-model-name, default DefaultServedName
	VocabSize    int    // config vocab_size (embedding rows); default 512; must be >= TokenizerSize()
	Hidden       int    // hidden_size, default 64
	Intermediate int    // intermediate_size, default 128
	Layers       int    // num_hidden_layers, default 2
	Heads        int    // num_attention_heads, default 4
	KVHeads      int    // num_key_value_heads, default 2
	Shards       int    // safetensors shards, default 2; 1 writes a single model.safetensors without an index, like transformers
	Quant        string // "" = bf16 checkpoint; "awq" = AWQ 4-bit (GEMM) variant
	// TargetBytes > 0 scales the checkpoint so its tensor bytes come out near this: Hidden and
	// Intermediate double (Heads and KVHeads too, keeping head_dim <= 128) until 32 layers would
	// reach it, then Layers and Intermediate are chosen to land close. The effective values are in
	// Layout.Options. Below the size of a one-layer model it has no effect beyond Layers = 1.
	TargetBytes int64
	Seed        uint64 // weights are deterministic pseudo-random values from this seed
	NoLoRA      bool   // omit the LoRA adapter
	MaxModelLen int    // engine max-model-len, default 8192
}

// Layout says where Generate put things.
type Layout struct {
	Root       string // DIR
	ModelDir   string // DIR/model
	EngineFile string // DIR/engine/engine.yaml
	DeployDir  string // DIR/deploy
	LoRAName   string // "sql-lora" (empty when NoLoRA)

	Options     Options  // effective options: defaults applied, scaled for TargetBytes
	HeadDim     int      // Hidden / Heads
	GroupSize   int      // AWQ group size; 0 for bf16
	ModelMount  string   // the model directory inside the container, e.g. /models/Llama-3.1-8B-Instruct-demo
	Shards      []string // safetensors shard file names, in order
	WeightBytes int64    // sum of the model's tensor bytes (index metadata.total_size)
	Files       []string // every file written, slash-separated and relative to Root, sorted
}

// Path returns the absolute path of rel, a slash-separated path relative to Root
// (e.g. "model/config.json").
func (l *Layout) Path(rel string) string {
	return filepath.Join(l.Root, filepath.FromSlash(rel))
}

// MutateJSON rewrites the JSON file rel (relative to Root) after fn edits its top-level object —
// handy for tests that break one field. Numbers keep their text; keys come out sorted.
func (l *Layout) MutateJSON(rel string, fn func(doc map[string]any) error) error {
	p := l.Path(rel)
	data, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("sample: %s: %w", rel, err)
	}
	if err := fn(doc); err != nil {
		return err
	}
	return writeJSONFile(p, doc)
}

// withDefaults fills zero fields.
func (o Options) withDefaults() Options {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	if o.ModelName == "" {
		o.ModelName = DefaultModelName
	}
	if o.ServedName == "" {
		o.ServedName = DefaultServedName
	}
	def(&o.VocabSize, 512)
	def(&o.Hidden, 64)
	def(&o.Intermediate, 128)
	def(&o.Layers, 2)
	def(&o.Heads, 4)
	def(&o.KVHeads, 2)
	def(&o.Shards, 2)
	def(&o.MaxModelLen, 8192)
	return o
}

func validName(s, extra string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(extra, c)) {
			return false
		}
	}
	return true
}

// validate checks options after defaults.
func (o Options) validate() error {
	bad := func(format string, args ...any) error { return fmt.Errorf("sample: "+format, args...) }
	if !validName(o.ModelName, "-_./") || strings.HasPrefix(o.ModelName, "/") {
		return bad("ModelName %q must be an HF-style id (letters, digits, '-', '_', '.', '/')", o.ModelName)
	}
	if base := path.Base(o.ModelName); base == "." || base == ".." || strings.HasSuffix(o.ModelName, "/") {
		return bad("ModelName %q must end in a model name", o.ModelName)
	}
	if !validName(o.ServedName, "-_./:") {
		return bad("ServedName %q must be letters, digits, '-', '_', '.', '/', ':'", o.ServedName)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"VocabSize", o.VocabSize}, {"Hidden", o.Hidden}, {"Intermediate", o.Intermediate}, {"Layers", o.Layers},
		{"Heads", o.Heads}, {"KVHeads", o.KVHeads}, {"Shards", o.Shards}, {"MaxModelLen", o.MaxModelLen}} {
		if f.v < 0 {
			return bad("%s must be positive, got %d", f.name, f.v)
		}
	}
	if o.TargetBytes < 0 {
		return bad("TargetBytes must not be negative, got %d", o.TargetBytes)
	}
	if n := TokenizerSize(); o.VocabSize < n {
		return bad("VocabSize %d is smaller than the tokenizer's %d tokens", o.VocabSize, n)
	}
	if o.Hidden%o.Heads != 0 {
		return bad("Hidden must be a multiple of Heads (Hidden %d, Heads %d)", o.Hidden, o.Heads)
	}
	if o.Heads%o.KVHeads != 0 {
		return bad("Heads must be a multiple of KVHeads (Heads %d, KVHeads %d)", o.Heads, o.KVHeads)
	}
	if (o.Hidden/o.Heads)%2 != 0 {
		return bad("head_dim (Hidden/Heads = %d) must be even for rotary embeddings", o.Hidden/o.Heads)
	}
	if o.MaxModelLen > maxPositionEmbeddings {
		return bad("MaxModelLen %d exceeds max_position_embeddings %d", o.MaxModelLen, maxPositionEmbeddings)
	}
	switch o.Quant {
	case "":
	case "awq":
		if awqGroup(o) == 0 {
			return bad("Quant \"awq\" needs Hidden and Intermediate to be multiples of 32 (Hidden %d, Intermediate %d)", o.Hidden, o.Intermediate)
		}
		if kv := o.KVHeads * (o.Hidden / o.Heads); kv%8 != 0 {
			return bad("Quant \"awq\" needs KVHeads*head_dim (%d) to be a multiple of 8 (8 4-bit values per int32)", kv)
		}
	default:
		return bad("Quant must be \"\" or \"awq\", got %q", o.Quant)
	}
	if n := len(modelTensors(o, awqGroup(o))); o.Shards > n {
		return bad("Shards %d exceeds the %d tensors of the checkpoint", o.Shards, n)
	}
	return nil
}

// awqGroup is the AWQ group size: 128 when Hidden and Intermediate allow it, else 32; 0 if neither
// divides them, or for bf16.
func awqGroup(o Options) int {
	if o.Quant != "awq" {
		return 0
	}
	for _, g := range []int{128, 32} {
		if o.Hidden%g == 0 && o.Intermediate%g == 0 {
			return g
		}
	}
	return 0
}

func weightBytes(o Options) int64 { return totalBytes(modelTensors(o, awqGroup(o))) }

// scale applies TargetBytes (see Options).
func (o Options) scale() Options {
	t := o.TargetBytes
	if t <= 0 {
		return o
	}
	for o.Hidden < 16384 {
		probe := o
		probe.Layers = 32
		if weightBytes(probe) >= t {
			break
		}
		o.Hidden *= 2
		o.Intermediate *= 2
		if o.Hidden/o.Heads > 128 {
			o.Heads *= 2
			o.KVHeads *= 2
		}
	}
	o.Layers = 1
	one := weightBytes(o)
	o.Layers = 2
	perLayer := weightBytes(o) - one
	fixed := one - perLayer
	o.Layers = int((t - fixed + perLayer/2) / perLayer)
	if o.Layers < 1 {
		o.Layers = 1
	}
	// Fine-tune with the MLP width, keeping it a multiple of the AWQ group.
	q := 32
	if o.Hidden%128 == 0 && o.Intermediate%128 == 0 {
		q = 128
	}
	cur := weightBytes(o)
	wider := o
	wider.Intermediate += q
	if slope := weightBytes(wider) - cur; slope > 0 {
		d := t - cur
		steps := (d + slope/2) / slope
		if d < 0 {
			steps = (d - slope/2) / slope
		}
		if i := int64(o.Intermediate) + steps*int64(q); i >= int64(q) {
			o.Intermediate = int(i)
		}
	}
	return o
}

// Generate writes the sample repository into dir, which must not exist or be empty. The result is
// byte-identical for equal options. On error (including ctx cancellation) files already written
// stay; no partial file is left under a final name.
func Generate(ctx context.Context, dir string, opts Options) (*Layout, error) {
	if dir == "" {
		return nil, errors.New("sample: no directory given")
	}
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	o = o.scale()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrDirNotEmpty, dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("sample: %w", err)
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("sample: %w", err)
	}
	g := awqGroup(o)
	l := &Layout{
		Root:       root,
		ModelDir:   filepath.Join(root, "model"),
		EngineFile: filepath.Join(root, "engine", "engine.yaml"),
		DeployDir:  filepath.Join(root, "deploy"),
		Options:    o,
		HeadDim:    o.Hidden / o.Heads,
		GroupSize:  g,
		ModelMount: ModelsMount + "/" + path.Base(o.ModelName),
	}
	if !o.NoLoRA {
		l.LoRAName = LoRAName
	}
	for _, d := range []string{l.ModelDir, filepath.Dir(l.EngineFile), l.DeployDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("sample: %w", err)
		}
	}
	if l.LoRAName != "" {
		if err := os.MkdirAll(l.Path("model/loras/"+LoRAName), 0o755); err != nil {
			return nil, fmt.Errorf("sample: %w", err)
		}
	}

	tok := demoTokenizer()
	tensors := modelTensors(o, g)
	shards := splitShards(tensors, o.Shards)
	l.WeightBytes = totalBytes(tensors)
	for i := range shards {
		l.Shards = append(l.Shards, shardName(i, len(shards)))
	}

	small := []struct {
		rel string
		v   any
	}{
		{"model/config.json", modelConfig(o, tok, g)},
		{"model/generation_config.json", generationConfig(tok)},
		{"model/tokenizer.json", tok.tokenizerJSON()},
		{"model/tokenizer_config.json", tok.tokenizerConfig()},
		{"model/special_tokens_map.json", specialTokensMap()},
		{"model/README.md", modelCard(o, l)},
		{"engine/engine.yaml", engineYAML(o, l)},
		{"deploy/deployment.yaml", deploymentYAML(o, l)},
		{"deploy/Dockerfile", dockerfile()},
		{"deploy/requirements.lock", requirementsLock()},
	}
	if l.LoRAName != "" {
		small = append(small, struct {
			rel string
			v   any
		}{"model/loras/" + LoRAName + "/adapter_config.json", adapterConfig(o)})
	}
	for _, f := range small {
		var err error
		if s, ok := f.v.(string); ok {
			err = writeFileAtomic(l.Path(f.rel), func(w io.Writer) error { _, err := io.WriteString(w, s); return err })
		} else {
			err = writeJSONFile(l.Path(f.rel), f.v)
		}
		if err != nil {
			return nil, err
		}
		l.Files = append(l.Files, f.rel)
	}

	// Weights: shards (and the adapter) stream in parallel, one 1 MiB buffer each.
	type job struct {
		rel string
		ts  []tensor
	}
	var jobs []job
	for i, s := range shards {
		jobs = append(jobs, job{"model/" + l.Shards[i], s})
	}
	if l.LoRAName != "" {
		jobs = append(jobs, job{"model/loras/" + LoRAName + "/adapter_model.safetensors", loraTensors(o)})
	}
	if err := runJobs(ctx, len(jobs), func(ctx context.Context, i int) error {
		return writeFileAtomic(l.Path(jobs[i].rel), func(w io.Writer) error {
			return writeSafetensors(ctx, w, jobs[i].ts, o.Seed)
		})
	}); err != nil {
		return nil, err
	}
	for _, j := range jobs {
		l.Files = append(l.Files, j.rel)
	}

	if len(shards) > 1 {
		wm := map[string]string{}
		for i, s := range shards {
			for _, t := range s {
				wm[t.name] = l.Shards[i]
			}
		}
		idx := map[string]any{"metadata": map[string]any{"total_size": l.WeightBytes}, "weight_map": wm}
		if err := writeJSONFile(l.Path("model/model.safetensors.index.json"), idx); err != nil {
			return nil, err
		}
		l.Files = append(l.Files, "model/model.safetensors.index.json")
	}
	sort.Strings(l.Files)
	return l, nil
}

func shardName(i, n int) string {
	if n == 1 {
		return "model.safetensors"
	}
	return fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, n)
}

// runJobs runs fn for 0..n-1 on up to GOMAXPROCS goroutines; the first error cancels the rest.
func runJobs(ctx context.Context, n int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				once.Do(func() { first = ctx.Err() })
				return
			}
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	return first
}

// writeFileAtomic writes name so that a reader never sees a partial file under the final name.
func writeFileAtomic(name string, write func(io.Writer) error) error {
	if err := providers.WriteFileAtomic(name, 0o644, write); err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	return nil
}

// marshalJSON encodes like Python's json.dumps(indent=2, ensure_ascii=False): two-space indent,
// map keys sorted, no HTML escaping, trailing newline.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeJSONFile(name string, v any) error {
	data, err := marshalJSON(v)
	if err != nil {
		return fmt.Errorf("sample: encode %s: %w", name, err)
	}
	return writeFileAtomic(name, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// member and object are a JSON object that keeps its key order (tokenizer.json is written in the
// tokenizers library's struct order, not sorted).
type member struct {
	Key   string
	Value any
}

type object []member

func (ob object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, m := range ob {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(m.Key); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := enc.Encode(m.Value); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
