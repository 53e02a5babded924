// Package enginesim is a vLLM-compatible engine simulator for drills and tests without GPUs. Load
// reads a model directory the way `vllm serve` does and fails where vLLM would, with a vLLM-like
// message; Server serves vLLM's OpenAI-compatible HTTP API over the loaded model, with a latency
// model (prefill rate, inter-token latency, bounded concurrent sequences) and fault injection.
package enginesim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"lifeboat/internal/enginesim/tokenizer"
	"lifeboat/manifest/modelrepo"
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
	// Engine config.
	if engineConfigPath != "" {
		data, err := os.ReadFile(engineConfigPath)
		if err != nil {
			return nil, loadErr("config", "vllm serve: error: --config: %v", err)
		}
		cfg, err := modelrepo.ParseEngineConfig(data, engineConfigPath)
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
		m.Engine = cfg
	} else {
		m.Engine, _ = modelrepo.ParseEngineConfig([]byte("{}"), "(defaults)")
	}
	eng := m.Engine
	m.ServedNames = eng.ServedModelNames
	if len(m.ServedNames) == 0 {
		m.ServedNames = []string{modelDir}
	}

	// config.json and the architecture.
	data, err := os.ReadFile(filepath.Join(modelDir, "config.json"))
	if err != nil {
		return nil, loadErr("config", "OSError: %s does not appear to have a file named config.json.", modelDir)
	}
	if m.Config, err = modelrepo.ParseModelConfig(data, "config.json"); err != nil {
		return nil, loadErr("config", "ValueError: Invalid config.json in %s: %v", modelDir, err)
	}
	if len(m.Config.Architectures) == 0 {
		return nil, loadErr("architecture", "ValueError: No model architectures are specified in %s/config.json (field \"architectures\" is missing or empty)", modelDir)
	}
	supported := false
	for _, a := range m.Config.Architectures {
		if slices.Contains(SupportedArchitectures, a) {
			supported = true
		}
	}
	if !supported {
		return nil, loadErr("architecture", "ValueError: Model architectures %s are not supported for now. Supported architectures: %s", pyList(m.Config.Architectures), strings.Join(SupportedArchitectures, ", "))
	}

	// Quantization.
	modelQuant := ""
	if m.Config.Quantization != nil {
		modelQuant = modelrepo.NormalizeModelQuantMethod(m.Config.Quantization.Method)
	} else {
		for _, f := range []string{"quantize_config.json", "quant_config.json", "hf_quant_config.json"} {
			if d, err := os.ReadFile(filepath.Join(modelDir, f)); err == nil {
				if q, err := modelrepo.ParseQuantConfig(d, f); err == nil && q.Method != "" {
					modelQuant = modelrepo.NormalizeModelQuantMethod(q.Method)
					break
				}
			}
		}
	}
	m.Quantization, m.checkpointQuant = modelQuant, modelQuant
	if want := strings.ToLower(eng.Quantization); want != "" {
		q, known := modelrepo.EngineQuantMethods[want]
		switch {
		case !known:
			return nil, loadErr("quantization", "vllm serve: error: argument --quantization/-q: invalid choice: '%s'", eng.Quantization)
		case modelQuant != "" && !slices.Contains(q.ModelMethods, modelQuant):
			return nil, loadErr("quantization", "ValueError: Quantization method specified in the model config (%s) does not match the quantization method specified in the `quantization` argument (%s).", modelQuant, want)
		case modelQuant == "" && quantNeedsCheckpoint(want):
			return nil, loadErr("quantization", "ValueError: Cannot find the config file for %s: the model at %s has no quantization_config in config.json and no quantize_config.json", want, modelDir)
		}
		m.Quantization = want
	}

	// Context length.
	derived, err := m.Config.MaxModelLen()
	if err != nil {
		return nil, loadErr("max-model-len", "ValueError: config.json: %v", err)
	}
	m.MaxModelLen = derived.Len
	if eng.MaxModelLen > 0 {
		if eng.MaxModelLen > derived.Len && o.Getenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN") != "1" && !strings.EqualFold(o.Getenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN"), "true") {
			key := derived.Key
			if key == "" {
				key = "default"
			}
			return nil, loadErr("max-model-len", "ValueError: User-specified max_model_len (%d) is greater than the derived max_model_len (%s=%d in model's config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution.", eng.MaxModelLen, key, derived.Len)
		}
		m.MaxModelLen = eng.MaxModelLen
	}

	// Tokenizer.
	tokDir := modelDir
	if eng.Tokenizer != "" {
		tokDir = m.resolve(eng.Tokenizer)
	}
	if err := m.loadTokenizer(tokDir); err != nil {
		return nil, err
	}

	// Chat template (a missing one is not a start-up failure; chat requests get 400).
	if err := m.loadChatTemplate(); err != nil {
		return nil, err
	}

	// Static LoRA adapters.
	if len(eng.LoRAModules) > 0 && !eng.EnableLoRA {
		return nil, loadErr("lora", "ValueError: --lora-modules requires --enable-lora")
	}
	for _, mod := range eng.LoRAModules {
		base := mod.BaseModelName
		if base == "" {
			base = m.ServedNames[0]
		}
		l, err := m.checkAdapter(mod.Name, m.resolve(mod.Path), base)
		if err != nil {
			return nil, err
		}
		m.LoRAs = append(m.LoRAs, l)
	}

	// Weights last: the cold start.
	if err := m.loadWeights(ctx); err != nil {
		return nil, err
	}
	if o.LoadDelay > 0 {
		t := time.NewTimer(o.LoadDelay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	m.LoadTime = time.Since(start)
	return m, nil
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
	data, err := os.ReadFile(p)
	switch {
	case err == nil:
		bpe, err := tokenizer.FromJSON(data, p)
		if err != nil {
			return loadErr("tokenizer", "Exception: Can't load tokenizer for '%s': %v", dir, err)
		}
		tok = bpe
	case fileExists(filepath.Join(dir, "tokenizer.model")):
		// A slow SentencePiece tokenizer (LlamaTokenizer and kin), which vLLM loads too.
		p = filepath.Join(dir, "tokenizer.model")
		d, err := os.ReadFile(p)
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
	if d, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err == nil {
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
		if data, err := os.ReadFile(p); err == nil {
			m.ChatTemplate = &modelrepo.ChatTemplate{Source: p, Name: "default", Text: string(data)}
			return nil
		}
		if !strings.ContainsAny(ct, "{}\n") {
			return loadErr("chat-template", "ValueError: The supplied chat template (%s) looks like a file path, but it failed to be opened.", ct)
		}
		m.ChatTemplate = &modelrepo.ChatTemplate{Source: "--chat-template", Name: "default", Text: ct}
		return nil
	}
	if data, err := os.ReadFile(filepath.Join(m.Dir, "chat_template.jinja")); err == nil {
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
	if data, err := os.ReadFile(filepath.Join(m.Dir, "chat_template.json")); err == nil {
		if ts, err := modelrepo.ParseChatTemplateJSON(data, "chat_template.json"); err == nil {
			pick(ts)
			return nil
		}
	}
	if data, err := os.ReadFile(filepath.Join(m.Dir, "tokenizer_config.json")); err == nil {
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
	data, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
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
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		found = true
		if w == "adapter_model.safetensors" {
			st, _ := f.Stat()
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
	if data, err := os.ReadFile(filepath.Join(m.Dir, "model.safetensors.index.json")); err == nil {
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
		f, err := os.Open(p)
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
