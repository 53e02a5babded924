package enginesim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"lifeboat/internal/base/wait"
	"lifeboat/internal/enginesim/tokenizer"
	"lifeboat/manifest/modelrepo"
	"lifeboat/providers/localfile"
)

// Options tune loading.
type Options struct {
	// LoadDelay is added to the cold start after the weights are read (--sim-load-delay).
	LoadDelay time.Duration
	// Getenv reads the environment (VLLM_ALLOW_LONG_MAX_MODEL_LEN); default os.Getenv.
	Getenv func(string) string
}

// LoadError is a start-up failure, worded like vLLM's.
type LoadError struct {
	Kind string // architecture, tokenizer, weights, quantization, max-model-len, lora, config, chat-template
	Msg  string
}

func (e *LoadError) Error() string { return e.Msg }

func loadErr(kind, format string, args ...any) error {
	return &LoadError{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// LoRA is a loaded adapter.
type LoRA struct {
	Name string
	Path string // resolved on this host
	Base string // served name it applies to
	Rank int
}

// Model is a model directory that loaded.
type Model struct {
	Dir          string
	Config       *modelrepo.ModelConfig
	Engine       *modelrepo.EngineConfig
	ServedNames  []string
	MaxModelLen  int64
	Tokenizer    tokenizer.Tokenizer     // tokenizer.json pipeline (also vocab.json + merges.txt) or SentencePiece
	ChatTemplate *modelrepo.ChatTemplate // nil when the repository has none
	BOSToken     string
	EOSToken     string
	StopIDs      map[int]bool
	LoRAs        []LoRA
	Shards       []string
	WeightBytes  int64         // bytes read from the shards
	LoadTime     time.Duration // the simulated cold start
	Quantization string        // the effective method, "" for none

	outputIDs       []int                       // token ids generation draws from
	checkpointQuant string                      // the checkpoint's quantization method ("" for none)
	tensors         map[string]modelrepo.Tensor // every tensor of the shards loaded
}

// SupportedArchitectures are the architectures the simulator accepts (a subset of vLLM's registry,
// the text generation models Lifeboat is used with).
var SupportedArchitectures = []string{
	"LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
	"Qwen2MoeForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "GemmaForCausalLM",
	"Gemma2ForCausalLM", "Gemma3ForCausalLM", "Phi3ForCausalLM", "GPTNeoXForCausalLM",
	"GPT2LMHeadModel", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "GptOssForCausalLM",
	"Mistral3ForConditionalGeneration", "Gemma3ForConditionalGeneration", "GraniteForCausalLM",
	"OlmoForCausalLM", "Olmo2ForCausalLM", "StarCoder2ForCausalLM", "InternLM2ForCausalLM",
}

// quantNeedsCheckpoint lists the engine methods that need a quantized checkpoint (not online).
func quantNeedsCheckpoint(m string) bool {
	q, ok := modelrepo.EngineQuantMethods[m]
	return ok && !q.Online
}

// Load reads modelDir as vLLM would at start-up with the engine config at engineConfigPath
// ("" for none): config.json, the tokenizer, every shard header and all weight bytes (honouring
// ctx), the quantization and context length checks, the static LoRA adapters and the chat
// template. Failures are *LoadError with vLLM-like messages.
func Load(ctx context.Context, modelDir, engineConfigPath string, o Options) (*Model, error) {
	start := time.Now()
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	m := &Model{Dir: modelDir, StopIDs: map[int]bool{}}
	if st, err := os.Stat(modelDir); err != nil || !st.IsDir() {
		return nil, loadErr("config", "OSError: %s does not appear to be a model directory (not found or not a directory)", modelDir)
	}
	var err error
	if m.Engine, err = loadEngineConfig(engineConfigPath); err != nil {
		return nil, err
	}
	m.ServedNames = m.Engine.ServedModelNames
	if len(m.ServedNames) == 0 {
		m.ServedNames = []string{modelDir}
	}
	for _, step := range []func() error{
		m.loadModelConfig,
		m.checkServingFiles,
		m.checkRopeScaling,
		m.checkQuantization,
		func() error { return m.checkContextLength(o.Getenv) },
		func() error { return m.loadTokenizer(m.tokenizerDir()) },
		m.loadChatTemplate, // a missing one is not a start-up failure; chat requests get 400
		m.loadLoRAs,
		func() error { return m.loadWeights(ctx) }, // weights last: the cold start
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := wait.Sleep(ctx, o.LoadDelay); err != nil {
		return nil, err
	}
	m.LoadTime = time.Since(start)
	return m, nil
}

// Limits on the files Load reads whole (weights are streamed): a model directory is input, and a
// FIFO, /dev/zero or a huge file in it must fail the load, not hang it or take the memory.
const (
	maxConfigFile    = 16 << 20  // config.json, engine config, quant, adapter, tokenizer config, chat templates, index
	maxTokenizerFile = 256 << 20 // tokenizer.json, tokenizer.model
)

// readInput reads a whole regular file of at most limit bytes (see localfile.ReadFile).
func readInput(p string, limit int64) ([]byte, error) { return localfile.ReadFile(p, limit) }

// readOptional is readInput for a file that may be absent: (nil, nil) when it does not exist.
func readOptional(p string, limit int64) ([]byte, error) {
	data, err := localfile.ReadFile(p, limit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// loadEngineConfig parses the engine config as vllm serve --config would ("" for the defaults).
func loadEngineConfig(path string) (*modelrepo.EngineConfig, error) {
	if path == "" {
		cfg, _ := modelrepo.ParseEngineConfig([]byte("{}"), "(defaults)")
		return cfg, nil
	}
	data, err := readInput(path, maxConfigFile)
	if err != nil {
		return nil, loadErr("config", "vllm serve: error: --config: %v", err)
	}
	cfg, err := modelrepo.ParseEngineConfig(data, path)
	if cfg == nil {
		return nil, loadErr("config", "vllm serve: error: --config: %v", err)
	}
	var ce *modelrepo.EngineConfigError
	if errors.As(err, &ce) {
		for _, p := range ce.Problems {
			if p.Kind == modelrepo.ProblemType || p.Kind == modelrepo.ProblemLoRAModule {
				return nil, loadErr("config", "vllm serve: error: argument --%s: %s", p.Key, p.Msg)
			}
		}
	}
	if len(cfg.Unknown) > 0 {
		var names []string
		for _, k := range cfg.Unknown {
			names = append(names, "--"+k.Key)
		}
		return nil, loadErr("config", "vllm serve: error: unrecognized arguments: %s", strings.Join(names, " "))
	}
	return cfg, nil
}

// loadModelConfig reads config.json and checks the architecture.
func (m *Model) loadModelConfig() error {
	data, err := readOptional(filepath.Join(m.Dir, "config.json"), maxConfigFile)
	switch {
	case err != nil:
		return loadErr("config", "OSError: %s/config.json: %v", m.Dir, err)
	case data == nil:
		return loadErr("config", "OSError: %s does not appear to have a file named config.json.", m.Dir)
	}
	if m.Config, err = modelrepo.ParseModelConfig(data, "config.json"); err != nil {
		return loadErr("config", "ValueError: Invalid config.json in %s: %v", m.Dir, err)
	}
	if len(m.Config.Architectures) == 0 {
		return loadErr("architecture", "ValueError: No model architectures are specified in %s/config.json (field \"architectures\" is missing or empty)", m.Dir)
	}
	for _, a := range m.Config.Architectures {
		if slices.Contains(SupportedArchitectures, a) {
			return nil
		}
	}
	return loadErr("architecture", "ValueError: Model architectures %s are not supported for now. Supported architectures: %s", pyList(m.Config.Architectures), strings.Join(SupportedArchitectures, ", "))
}

// checkQuantization finds the checkpoint's quantization and checks the engine's against it.
func (m *Model) checkQuantization() error {
	modelQuant := ""
	if m.Config.Quantization != nil {
		modelQuant = modelrepo.NormalizeModelQuantMethod(m.Config.Quantization.Method)
	} else {
		for _, f := range []string{"quantize_config.json", "quant_config.json", "hf_quant_config.json"} {
			d, err := readOptional(filepath.Join(m.Dir, f), maxConfigFile)
			if err != nil {
				return loadErr("quantization", "OSError: %v", err)
			}
			if q, err := modelrepo.ParseQuantConfig(d, f); d != nil && err == nil && q.Method != "" {
				modelQuant = modelrepo.NormalizeModelQuantMethod(q.Method)
				break
			}
		}
	}
	m.Quantization, m.checkpointQuant = modelQuant, modelQuant
	want := strings.ToLower(m.Engine.Quantization)
	if want == "" {
		return nil
	}
	q, known := modelrepo.EngineQuantMethods[want]
	switch {
	case !known:
		return loadErr("quantization", "vllm serve: error: argument --quantization/-q: invalid choice: '%s'", m.Engine.Quantization)
	case modelQuant != "" && !slices.Contains(q.ModelMethods, modelQuant):
		return loadErr("quantization", "ValueError: Quantization method specified in the model config (%s) does not match the quantization method specified in the `quantization` argument (%s).", modelQuant, want)
	case modelQuant == "" && quantNeedsCheckpoint(want):
		return loadErr("quantization", "ValueError: Cannot find the config file for %s: the model at %s has no quantization_config in config.json and no quantize_config.json", want, m.Dir)
	}
	m.Quantization = want
	return nil
}

// checkContextLength derives max_model_len and checks the engine's against it.
func (m *Model) checkContextLength(getenv func(string) string) error {
	derived, err := m.Config.MaxModelLen()
	if err != nil {
		return loadErr("max-model-len", "ValueError: config.json: %v", err)
	}
	m.MaxModelLen = derived.Len
	eng := m.Engine
	if eng.MaxModelLen <= 0 {
		return nil
	}
	allow := getenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN")
	if eng.MaxModelLen > derived.Len && allow != "1" && !strings.EqualFold(allow, "true") {
		key := derived.Key
		if key == "" {
			key = "default"
		}
		return loadErr("max-model-len", "ValueError: User-specified max_model_len (%d) is greater than the derived max_model_len (%s=%d in model's config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution.", eng.MaxModelLen, key, derived.Len)
	}
	m.MaxModelLen = eng.MaxModelLen
	return nil
}

// tokenizerDir is the engine's --tokenizer, else the model directory.
func (m *Model) tokenizerDir() string {
	if m.Engine.Tokenizer != "" {
		return m.resolve(m.Engine.Tokenizer)
	}
	return m.Dir
}

// loadLoRAs checks the static LoRA adapters of the engine config.
func (m *Model) loadLoRAs() error {
	eng := m.Engine
	if len(eng.LoRAModules) > 0 && !eng.EnableLoRA {
		return loadErr("lora", "ValueError: --lora-modules requires --enable-lora")
	}
	for _, mod := range eng.LoRAModules {
		base := mod.BaseModelName
		if base == "" {
			base = m.ServedNames[0]
		}
		l, err := m.checkAdapter(mod.Name, m.resolve(mod.Path), base)
		if err != nil {
			return err
		}
		m.LoRAs = append(m.LoRAs, l)
	}
	return nil
}

// resolve maps a path from the engine config onto this host: a path under the engine config's
// model mount is re-rooted at the model directory actually given.
func (m *Model) resolve(p string) string {
	mount := strings.TrimSuffix(m.Engine.Model, "/")
	if mount != "" && filepath.IsAbs(mount) {
		if p == mount {
			return m.Dir
		}
		if rest, ok := strings.CutPrefix(p, mount+"/"); ok {
			return filepath.Join(m.Dir, filepath.FromSlash(rest))
		}
	}
	return p
}

func pyList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = "'" + x + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func (m *Model) loadTokenizer(dir string) error {
	p := filepath.Join(dir, "tokenizer.json")
	var tok tokenizer.Tokenizer
	data, err := readOptional(p, maxTokenizerFile)
	switch {
	case err != nil:
		return loadErr("tokenizer", "OSError: Can't load tokenizer for '%s': %v", dir, err)
	case data != nil:
		bpe, err := tokenizer.FromJSON(data, p)
		if err != nil {
			return loadErr("tokenizer", "Exception: Can't load tokenizer for '%s': %v", dir, err)
		}
		tok = bpe
	case fileExists(filepath.Join(dir, "tokenizer.model")):
		// A slow SentencePiece tokenizer (LlamaTokenizer and kin), which vLLM loads too.
		p = filepath.Join(dir, "tokenizer.model")
		d, err := readInput(p, maxTokenizerFile)
		if err != nil {
			return loadErr("tokenizer", "OSError: Can't load tokenizer for '%s': %v", dir, err)
		}
		spm, err := tokenizer.NewSentencePiece(d, p)
		if err != nil {
			return loadErr("tokenizer", "RuntimeError: Internal: could not parse ModelProto from %s (%v)", p, err)
		}
		tok = spm
	case fileExists(filepath.Join(dir, "vocab.json")) && fileExists(filepath.Join(dir, "merges.txt")):
		// A slow GPT-2 style BPE tokenizer.
		p = filepath.Join(dir, "vocab.json")
		bpe, err := tokenizer.FromSlowBPE(dir)
		if err != nil {
			return loadErr("tokenizer", "Exception: Can't load tokenizer for '%s': %v", dir, err)
		}
		tok = bpe
	default:
		for _, slow := range []string{"vocab.json", "tiktoken.model"} {
			if fileExists(filepath.Join(dir, slow)) {
				return loadErr("tokenizer", "OSError: Can't load tokenizer for '%s': engine-sim only supports tokenizer.json, tokenizer.model and vocab.json + merges.txt, and this directory has only %s (vLLM itself may load it)", dir, slow)
			}
		}
		return loadErr("tokenizer", "OSError: Can't load tokenizer for '%s'. If you were trying to load it from 'https://huggingface.co/models', make sure you don't have a local directory with the same name. Otherwise, make sure '%s' is the correct path to a directory containing all relevant files for a PreTrainedTokenizerFast tokenizer.", dir, dir)
	}
	m.Tokenizer = tok
	d, err := readOptional(filepath.Join(dir, "tokenizer_config.json"), maxConfigFile)
	if err != nil {
		return loadErr("tokenizer", "OSError: %v", err)
	}
	if d != nil {
		if tc, err := modelrepo.ParseTokenizerConfig(d, "tokenizer_config.json"); err == nil {
			m.BOSToken, m.EOSToken = tc.BOSToken, tc.EOSToken
		} else {
			return loadErr("tokenizer", "ValueError: %v", err)
		}
	}
	if spm, ok := tok.(*tokenizer.SentencePiece); ok {
		// Without tokenizer_config.json's special tokens, LlamaTokenizer uses <s> / </s>.
		if m.BOSToken == "" {
			m.BOSToken = spm.BOS()
		}
		if m.EOSToken == "" {
			m.EOSToken = spm.EOS()
		}
	}
	if id, ok := tok.TokenID(m.EOSToken); ok && m.EOSToken != "" {
		m.StopIDs[id] = true
	}
	// Output tokens: regular tokens that decode to valid, non-empty UTF-8 (not a lone byte-fallback
	// token, which decodes to U+FFFD). VocabSize is O(1), so this is linear in the vocabulary.
	for id, n := 0, tok.VocabSize(); id < n; id++ {
		if tok.IsSpecial(id) {
			continue
		}
		s := tok.TokenText(id)
		if s != "" && utf8.ValidString(s) && !strings.ContainsAny(s, "\x00\r\uFFFD") {
			m.outputIDs = append(m.outputIDs, id)
		}
	}
	if len(m.outputIDs) == 0 {
		return loadErr("tokenizer", "Exception: tokenizer %s has no regular tokens", p)
	}
	return nil
}

// loadChatTemplate picks the template vLLM would: the engine's chat-template, else
// chat_template.jinja, else chat_template.json, else tokenizer_config.json's.
func (m *Model) loadChatTemplate() error {
	if ct := m.Engine.ChatTemplate; ct != "" {
		p := m.resolve(ct)
		data, err := readInput(p, maxConfigFile)
		if err == nil {
			m.ChatTemplate = &modelrepo.ChatTemplate{Source: p, Name: "default", Text: string(data)}
			return nil
		}
		if errors.Is(err, localfile.ErrTooLarge) || errors.Is(err, localfile.ErrNotRegular) {
			return loadErr("chat-template", "ValueError: The supplied chat template (%s) could not be read: %v", ct, err)
		}
		if !strings.ContainsAny(ct, "{}\n") {
			return loadErr("chat-template", "ValueError: The supplied chat template (%s) looks like a file path, but it failed to be opened.", ct)
		}
		m.ChatTemplate = &modelrepo.ChatTemplate{Source: "--chat-template", Name: "default", Text: ct}
		return nil
	}
	if data, _ := readOptional(filepath.Join(m.Dir, "chat_template.jinja"), maxConfigFile); data != nil {
		m.ChatTemplate = &modelrepo.ChatTemplate{Source: "chat_template.jinja", Name: "default", Text: string(data)}
		return nil
	}
	pick := func(ts []modelrepo.ChatTemplate) {
		for i := range ts {
			if ts[i].Name == "default" || len(ts) == 1 {
				m.ChatTemplate = &ts[i]
				return
			}
		}
	}
	if data, _ := readOptional(filepath.Join(m.Dir, "chat_template.json"), maxConfigFile); data != nil {
		if ts, err := modelrepo.ParseChatTemplateJSON(data, "chat_template.json"); err == nil {
			pick(ts)
			return nil
		}
	}
	if data, _ := readOptional(filepath.Join(m.Dir, "tokenizer_config.json"), maxConfigFile); data != nil {
		if tc, err := modelrepo.ParseTokenizerConfig(data, "tokenizer_config.json"); err == nil {
			pick(tc.ChatTemplates)
		}
	}
	return nil
}

// checkAdapter validates a LoRA adapter the way vLLM loads one.
func (m *Model) checkAdapter(name, dir, base string) (LoRA, error) {
	fail := func(format string, args ...any) (LoRA, error) {
		return LoRA{}, loadErr("lora", "ValueError: Loading lora %s failed: %s", name, fmt.Sprintf(format, args...))
	}
	data, err := readOptional(filepath.Join(dir, "adapter_config.json"), maxConfigFile)
	if err != nil {
		return fail("%v", err)
	}
	if data == nil {
		return fail("No adapter found for %s", dir)
	}
	ac, err := modelrepo.ParseAdapterConfig(data, filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		return fail("%v", err)
	}
	switch {
	case ac.UseDoRA:
		return fail("vLLM does not yet support DoRA.")
	case len(ac.ModulesToSave) > 0:
		return fail("vLLM only supports modules_to_save being None.")
	case ac.R > m.Engine.MaxLoRARank:
		return fail("LoRA rank %d is greater than max_lora_rank %d.", ac.R, m.Engine.MaxLoRARank)
	}
	found := false
	for _, w := range []string{"adapter_model.safetensors", "adapter_model.bin", "adapter_model.pt"} {
		p := filepath.Join(dir, w)
		f, st, err := localfile.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fail("%v", err)
		}
		found = true
		if w == "adapter_model.safetensors" {
			_, err = modelrepo.ReadSafetensorsHeader(f, st.Size())
		}
		f.Close()
		if err != nil {
			return fail("%s: Error while deserializing header: %v", p, err)
		}
		break
	}
	if !found {
		return fail("No adapter found for %s", dir)
	}
	return LoRA{Name: name, Path: dir, Base: base, Rank: ac.R}, nil
}

// loadWeights checks every shard's header and reads all its bytes (the cold start).
func (m *Model) loadWeights(ctx context.Context) error {
	var shards []string
	indexNames := map[string][]string{} // shard → tensors the index puts there
	data, err := readOptional(filepath.Join(m.Dir, "model.safetensors.index.json"), maxConfigFile)
	if err != nil {
		return loadErr("weights", "OSError: %v", err)
	}
	if data != nil {
		ix, err := modelrepo.ParseSafetensorsIndex(data, "model.safetensors.index.json")
		if err != nil {
			return loadErr("weights", "ValueError: %v", err)
		}
		shards = ix.Shards()
		for t, s := range ix.WeightMap {
			indexNames[s] = append(indexNames[s], t)
		}
	} else {
		matches, _ := filepath.Glob(filepath.Join(m.Dir, "*.safetensors"))
		for _, p := range matches {
			shards = append(shards, filepath.Base(p))
		}
		sort.Strings(shards)
	}
	if len(shards) == 0 {
		return loadErr("weights", "RuntimeError: Cannot find any model weights with `%s`", m.Dir)
	}
	buf := make([]byte, 1<<20)
	for _, s := range shards {
		p := filepath.Join(m.Dir, filepath.FromSlash(s))
		f, _, err := localfile.Open(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return loadErr("weights", "OSError: %v", err)
		}
		if err != nil {
			missing := indexNames[s]
			sort.Strings(missing)
			if len(missing) > 5 {
				missing = append(missing[:5], "…")
			}
			return loadErr("weights", "ValueError: Following weights were not initialized from checkpoint: {%s} (shard %s is missing)", strings.Join(missing, ", "), s)
		}
		err = m.readShard(ctx, f, p, indexNames[s], buf)
		f.Close()
		if err != nil {
			return err
		}
		m.Shards = append(m.Shards, s)
	}
	return m.checkTensors()
}

func (m *Model) readShard(ctx context.Context, f *os.File, p string, want []string, buf []byte) error {
	st, err := f.Stat()
	if err != nil {
		return loadErr("weights", "OSError: %v", err)
	}
	h, err := modelrepo.ReadSafetensorsHeader(f, st.Size())
	if err != nil {
		return loadErr("weights", "safetensors_rust.SafetensorError: Error while deserializing header: %s: %v", p, err)
	}
	for _, t := range want {
		if _, ok := h.Tensor(t); !ok {
			return loadErr("weights", "ValueError: Following weights were not initialized from checkpoint: {%s} (index names %s, which does not hold it)", t, filepath.Base(p))
		}
	}
	if _, err := f.Seek(8+h.HeaderLen, io.SeekStart); err != nil {
		return loadErr("weights", "OSError: %v", err)
	}
	var n int64
	for n < h.DataSize {
		if err := ctx.Err(); err != nil {
			return err
		}
		k, err := f.Read(buf[:min(int64(len(buf)), h.DataSize-n)])
		n += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return loadErr("weights", "OSError: reading %s: %v", p, err)
		}
	}
	if n != h.DataSize {
		return loadErr("weights", "safetensors_rust.SafetensorError: %s: read %d of %d weight bytes", p, n, h.DataSize)
	}
	m.WeightBytes += n
	if m.tensors == nil {
		m.tensors = map[string]modelrepo.Tensor{}
	}
	for _, t := range h.Tensors {
		m.tensors[t.Name] = t
	}
	return nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
