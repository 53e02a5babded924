package manifest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"lifeboat/manifest/modelrepo"
	"lifeboat/providers"
	"lifeboat/providers/localfile"
)

// DefaultEmbedLimit is the largest engine or deployment file embedded in the manifest itself, so
// that lint and show can read it without the bundle. Of the model files, only small configuration
// files are embedded (ModelEmbeddable, ModelConfigEmbedLimit).
const DefaultEmbedLimit = 1 << 20

// BuildOptions says what goes into a manifest.
type BuildOptions struct {
	ModelDir string // the model repository (required unless ModelStore is set)
	// ModelStore, if set, is the model repository instead of ModelDir: a store whose prefix holds
	// it (s3://bucket/llama/, gs://…, az://…, file://…). Each object is streamed once.
	ModelStore  providers.Store
	EngineFile  string   // the vLLM --config YAML, optional
	DeployPaths []string // files or directories of deployment manifests, optional
	Name        string   // manifest title, optional
	Created     time.Time
	Jobs        int   // files hashed at once; 0 means runtime.NumCPU()
	EmbedLimit  int64 // 0 means DefaultEmbedLimit
	// Progress, if set, is called with the bytes of each chunk as it is hashed, from up to Jobs
	// goroutines at once: it must be safe for concurrent use.
	Progress func(n int64)
	// Total, if set, is called once, before hashing, with the file count and total bytes.
	Total func(files, n int64)
	Log   *slog.Logger
}

// source is one file to put in the bundle.
type source struct {
	bundle string
	abs    string // the local path; for an object of store, its key
	size   int64
	part   Part
	role   Role
	store  providers.Store // nil for local files
}

// Build walks the inputs, hashes every file once with every digest, and assembles the manifest.
// The result depends only on the inputs' paths and bytes (and Created, when set).
func Build(ctx context.Context, o BuildOptions) (*Manifest, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.ModelDir == "" && o.ModelStore == nil {
		return nil, fmt.Errorf("build: a model directory is required")
	}
	srcs, err := collect(ctx, o)
	if err != nil {
		return nil, err
	}
	// Before any hashing: a secret in a deployment file must never reach the manifest.
	if err := checkDeploySecrets(ctx, srcs); err != nil {
		return nil, err
	}
	if o.Total != nil {
		var n int64
		for _, s := range srcs {
			n += s.size
		}
		o.Total(int64(len(srcs)), n)
	}
	files, err := hashAll(ctx, srcs, o, log)
	if err != nil {
		return nil, err
	}
	if err := checkEmbeddedSecrets(srcs, files); err != nil {
		return nil, err // a file changed between the check and the hashing
	}
	mc, shares := deriveModelConfig(ctx, srcs, o, log)
	ann := map[string]string{}
	if o.Name != "" {
		ann[AnnotationName] = o.Name
	}
	if !o.Created.IsZero() {
		ann[AnnotationCreated] = o.Created.UTC().Format(time.RFC3339)
		mc.Descriptor.CreatedAt = ann[AnnotationCreated]
	}
	if len(shares) > 1 {
		ann[AnnotationParamsByPrecision] = formatShares(shares)
	}
	return assemble(ann, mc, files)
}

// collect lists every input file with its bundle path, part and role, refusing duplicates.
func collect(ctx context.Context, o BuildOptions) ([]source, error) {
	var model []LocalFile
	var err error
	modelRoot := o.ModelDir
	if o.ModelStore != nil {
		modelRoot = o.ModelStore.String()
		model, err = walkStore(ctx, o.ModelStore)
	} else {
		model, err = WalkDir(o.ModelDir)
	}
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	if len(model) == 0 {
		return nil, fmt.Errorf("build: model directory %s has no files", modelRoot)
	}
	adapterDirs := map[string]bool{}
	for _, f := range model {
		if path.Base(f.Rel) == "adapter_config.json" {
			adapterDirs[path.Dir(f.Rel)] = true
		}
	}
	var out []source
	for _, f := range model {
		out = append(out, source{bundle: "model/" + f.Rel, abs: f.Abs, size: f.Size, part: PartModel, role: Classify(f.Rel, adapterDirs), store: o.ModelStore})
	}
	if o.EngineFile != "" {
		st, err := os.Stat(o.EngineFile)
		if err != nil {
			return nil, fmt.Errorf("build: engine config: %w", err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("build: engine config %s is not a regular file", o.EngineFile)
		}
		out = append(out, source{bundle: "engine/" + filepath.Base(o.EngineFile), abs: o.EngineFile, size: st.Size(), part: PartEngine, role: RoleEngineConfig})
	}
	for _, p := range o.DeployPaths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("build: deployment path: %w", err)
		}
		if st.Mode().IsRegular() {
			out = append(out, source{bundle: "deploy/" + filepath.Base(p), abs: p, size: st.Size(), part: PartDeployment, role: RoleDeployment})
			continue
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("build: deployment path %s is neither a file nor a directory", p)
		}
		files, err := WalkDir(p)
		if err != nil {
			return nil, fmt.Errorf("build: deployment %w", err)
		}
		for _, f := range files {
			out = append(out, source{bundle: "deploy/" + f.Rel, abs: f.Abs, size: f.Size, part: PartDeployment, role: RoleDeployment})
		}
	}
	seen := map[string]string{}
	for _, s := range out {
		if err := checkRelPath(s.bundle); err != nil {
			return nil, fmt.Errorf("build: %s: %v", s.origin(), err)
		}
		if prev, dup := seen[s.bundle]; dup {
			return nil, fmt.Errorf("build: %s and %s would both be stored as %s; rename one", prev, s.origin(), s.bundle)
		}
		seen[s.bundle] = s.origin()
	}
	return out, nil
}

// hashAll hashes files concurrently, largest first so the longest job does not start last.
func hashAll(ctx context.Context, srcs []source, o BuildOptions, log *slog.Logger) ([]File, error) {
	jobs := o.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	embed := o.EmbedLimit
	if embed == 0 {
		embed = DefaultEmbedLimit
	}
	order := make([]int, len(srcs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return srcs[order[a]].size > srcs[order[b]].size })
	files := make([]File, len(srcs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(jobs)
	for _, i := range order {
		s := srcs[i]
		g.Go(func() error {
			f, err := hashFile(gctx, s, embed, o.Progress)
			if err != nil {
				return err
			}
			log.Debug("hashed", "path", s.bundle, "bytes", s.size)
			files[i] = f
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return files, nil
}

// embedded reports whether a file's bytes go into the manifest: engine and deployment files up to
// embedLimit, and the model's small configuration files (see ModelEmbeddable).
func (s source) embedded(embedLimit int64) bool {
	if s.part != PartModel {
		return s.size <= embedLimit
	}
	return ModelEmbeddable(s.bundle, s.role) && s.size <= min(embedLimit, ModelConfigEmbedLimit)
}

func hashFile(ctx context.Context, s source, embedLimit int64, progress func(int64)) (File, error) {
	if s.store != nil {
		return hashObject(ctx, s, s.embedded(embedLimit), progress)
	}
	fh, _, err := localfile.Open(s.abs) // regular only: a file swapped for a FIFO must not hang the build
	if err != nil {
		return File{}, fmt.Errorf("hash %s: %w", s.bundle, err)
	}
	defer fh.Close()
	f := File{Path: s.bundle, Part: s.part, Role: s.role, MediaType: s.role.MediaType()}
	if s.part == PartEngine && s.size > embedLimit {
		return File{}, fmt.Errorf("hash %s: engine config is %d bytes, larger than the %d-byte limit for an embedded file", s.abs, s.size, embedLimit)
	}
	if s.embedded(embedLimit) {
		// Small engine/deployment files are embedded so the manifest alone can be linted; small
		// model configs so that diff can show what changed inside them.
		data, err := io.ReadAll(io.LimitReader(fh, s.size+1))
		if err != nil {
			return File{}, fmt.Errorf("hash %s: %w", s.bundle, err)
		}
		if int64(len(data)) != s.size {
			return File{}, fmt.Errorf("hash %s: file changed while reading (%d bytes, expected %d)", s.abs, len(data), s.size)
		}
		embed(&f, data)
		if progress != nil {
			progress(f.Size)
		}
		return f, nil
	}
	sums, n, err := HashReader(ctx, fh, progress)
	if err != nil {
		return File{}, fmt.Errorf("hash %s: %w", s.bundle, err)
	}
	if n != s.size {
		return File{}, fmt.Errorf("hash %s: file changed while reading (%d bytes, expected %d)", s.abs, n, s.size)
	}
	f.Size, f.Sums, f.Digest = n, sums, digestOf(sums.SHA256)
	return f, nil
}

// embed sets a file's content, size and checksums from its bytes.
func embed(f *File, data []byte) {
	f.Data, f.Size, f.Sums = data, int64(len(data)), ChecksumsOf(data)
	f.Digest = digestOf(f.Sums.SHA256)
}

// deriveModelConfig fills the ModelPack config from config.json and the safetensors headers, and
// says how the parameters split between precisions. Problems are logged, not fatal: the lint
// reports them with rule ids and hints.
func deriveModelConfig(ctx context.Context, srcs []source, o BuildOptions, log *slog.Logger) (ModelConfig, []PrecisionShare) {
	mc := ModelConfig{Descriptor: ModelDescriptor{Name: o.Name}, Config: ModelSpec{Architecture: "transformer"}}
	var cfg *modelrepo.ModelConfig
	formats := map[string]bool{}
	var weights []source
	for _, s := range srcs {
		if s.bundle == "model/config.json" {
			data, err := s.readFile(ctx)
			if err == nil {
				cfg, err = modelrepo.ParseModelConfig(data, "model/config.json")
			}
			if err != nil {
				log.Warn("cannot read config.json; the model config will be sparse", "err", err)
			}
		}
		if s.role == RoleWeights {
			ext := strings.TrimPrefix(path.Ext(s.bundle), ".")
			switch ext {
			case "bin", "pt", "pth":
				ext = "pytorch"
			}
			formats[ext] = true
			if ext == "safetensors" {
				weights = append(weights, s)
			}
		}
	}
	if len(formats) == 1 {
		for f := range formats {
			mc.Config.Format = f
		}
	} else if len(formats) > 1 {
		mc.Config.Format = "mixed"
	}
	if cfg != nil {
		mc.Descriptor.Family = cfg.ModelType
		if mc.Descriptor.Name == "" {
			mc.Descriptor.Name = cfg.NameOrPath
		}
		mc.Config.Precision = precision(cfg.DType)
		if cfg.Quantization != nil {
			mc.Config.Quantization = cfg.Quantization.Method
		}
	}
	shares := precisionShares(countParams(ctx, weights, cfg, log))
	var params int64
	for _, sh := range shares {
		params += sh.Params
		if sh.Precision == "mxfp4" {
			// config.json's torch_dtype is that of the unquantized tensors; the experts, most of
			// the parameters, are MXFP4.
			mc.Config.Precision = "mxfp4"
		}
	}
	if params > 0 {
		mc.Config.ParamSize = paramSize(params)
	}
	return mc, shares
}

func precision(dtype string) string {
	switch strings.ToLower(dtype) {
	case "bfloat16":
		return "bf16"
	case "float16", "half":
		return "fp16"
	case "float32", "float":
		return "fp32"
	}
	return strings.ToLower(dtype)
}

// paramSize renders a count in ModelPack's <count><scale> form, e.g. "8.0B", "124.4M".
func paramSize(n int64) string {
	for _, u := range []struct {
		v int64
		s string
	}{{1e15, "Q"}, {1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}} {
		if n >= u.v {
			return fmt.Sprintf("%.1f%s", float64(n)/float64(u.v), u.s)
		}
	}
	return fmt.Sprint(n)
}
