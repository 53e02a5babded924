package lint

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"lifeboat/manifest/modelrepo"
)

// Checks of the engine config itself and of how it fits the model.

func checkEngineConfigMissing(c *Context) {
	if d := c.engineDoc(); d.path == "" {
		c.Warnf("engine/", "", "the manifest has no engine config (built without --engine): a replica cannot be started with the same vLLM settings")
	}
}

func checkEngineConfigInvalid(c *Context) {
	checkEngineFileInvalid(c)
	checkCommandLineInvalid(c)
}

func checkEngineFileInvalid(c *Context) {
	d := c.engineDoc()
	if d.path == "" {
		return
	}
	if d.readErr != nil {
		c.Warnf(d.path, "rebuild the manifest so the engine config is embedded, or lint the bundle directory", "the engine config %s was not checked: %v", d.path, d.readErr)
		return
	}
	var ece *modelrepo.EngineConfigError
	if d.err != nil && !errors.As(d.err, &ece) {
		c.Errorf(d.path, "", "%v", d.err)
		return
	}
	if ece == nil {
		return
	}
	reportEngineProblems(c, d.path, ece.Problems)
}

// checkCommandLineInvalid reports what vLLM's argument parser would refuse on a deployment's
// command line (and its abbreviations, which work only until a flag with the same prefix is
// added). Problems of the engine config the container reads are the engine config's.
func checkCommandLineInvalid(c *Context) {
	for _, vc := range c.vllmContainers() {
		if vc.cfg == nil {
			continue
		}
		var own []modelrepo.EngineProblem
		for _, p := range vc.cfg.Problems {
			if p.File == "" || p.File == vc.file {
				own = append(own, p)
			}
		}
		reportEngineProblems(c, vc.file, own)
	}
}

// reportEngineProblems grades the problems of an engine config or a command line.
func reportEngineProblems(c *Context, file string, problems []modelrepo.EngineProblem) {
	for _, p := range problems {
		path := file
		if p.File != "" {
			path = p.File
		}
		msg := p.Format(file)
		switch p.Kind {
		case modelrepo.ProblemUnderscore, modelrepo.ProblemAbbreviation:
			c.Warnf(path, "", "%s", msg)
		case modelrepo.ProblemLoRAModule:
			c.Errorf(path, "write each lora-modules entry as \"name=path\" or a quoted JSON string: - '{\"name\": \"sql-lora\", \"path\": \"/models/m/loras/sql-lora\"}'", "%s", msg)
		default:
			c.Errorf(path, "", "%s", msg)
		}
	}
}

func checkEngineUnknownKeys(c *Context) {
	for _, r := range c.engineRuns() {
		checkEngineUnknownKeysRun(c, r)
	}
}

func checkEngineUnknownKeysRun(c *Context, r *engineRun) {
	for _, k := range r.cfg.Unknown {
		file := k.File
		switch k.Form {
		case modelrepo.KeyLegacy:
			c.Errorf(file, "remove it, or replace it as the note says", "%s: %s was a vllm serve flag but is gone (%s); a vLLM release without it refuses to start", at(file, k.Line), k.Key, k.Note)
		default:
			msg := fmt.Sprintf("%s: %s is not a vllm serve flag (flag list of %s)", at(file, k.Line), k.Key, modelrepo.EngineFlagsVersion)
			if k.Note != "" {
				msg += "; " + k.Note
			}
			c.Errorf(file, "", "%s", msg)
		}
	}
}

var inlineTemplate = regexp.MustCompile(`\{\{|\{%|\n`)

func checkEnginePaths(c *Context) {
	for _, r := range c.engineRuns() {
		checkEnginePathsRun(c, r)
	}
}

func checkEnginePathsRun(c *Context, r *engineRun) {
	cfg := r.cfg
	mount := r.mount(c)
	file := r.fileOf("model")
	if cfg.Model != "" && !path.IsAbs(cfg.Model) && r.vc == nil {
		if strings.HasPrefix(cfg.Model, ".") || strings.Count(cfg.Model, "/") != 1 {
			c.Warnf(file, "use the absolute path where the deployment mounts the bundled model directory", "%s: model %q is a relative path: vLLM resolves it against the server's working directory, so the lint cannot tell whether it is the bundled model", r.at("model"), cfg.Model)
		} else {
			c.Warnf(file, "point model at the directory where the deployment mounts the bundled model", "%s: model %q is a Hugging Face Hub id: a replica downloads it at start-up instead of serving the bundled model/ (and fails when the Hub is unreachable)", r.at("model"), cfg.Model)
		}
	}
	check := func(flag, value, what string) {
		if value == "" {
			return
		}
		file, where := r.fileOf(flag), r.at(flag)
		if !path.IsAbs(value) {
			return // a Hub id or a path relative to the working directory: not the bundle's business
		}
		rel, ok := underMount(mount, value)
		if !ok {
			if mount == "" {
				c.Warnf(file, "set model in the engine config to the absolute path of the mounted model directory", "%s: %s %s is an absolute path, but the model mount is unknown (model is not an absolute path), so the lint cannot tell whether the bundle carries it", where, flag, value)
				return
			}
			c.Warnf(file, "move the file under the model directory (and mount path), or make sure the image or a ConfigMap provides it", "%s: %s %s is outside the model mount %s, so the bundle does not capture it: a replica must provide it some other way", where, flag, value, mount)
			return
		}
		target := "model/" + rel
		if rel == "" {
			target = "model/"
		}
		if c.modelPathExists(rel) {
			return
		}
		c.Errorf(file, "", "%s: %s %s (%s) resolves to %s, which is not in the bundle: a replica's vLLM fails to find it", where, flag, value, what, target)
	}
	check("tokenizer", cfg.Tokenizer, "tokenizer directory")
	check("hf-config-path", cfg.HFConfigPath, "config directory")
	if !inlineTemplate.MatchString(cfg.ChatTemplate) {
		check("chat-template", cfg.ChatTemplate, "chat template file")
	}
	switch cfg.GenerationConfig {
	case "", "auto", "vllm":
	default:
		check("generation-config", cfg.GenerationConfig, "generation config directory")
	}
	// lora-modules paths under the mount are lora-missing's; here only those the bundle cannot hold.
	for i, m := range cfg.LoRAModules {
		if m.Path == "" {
			continue
		}
		if _, ok := underMount(mount, m.Path); ok {
			continue
		}
		file := r.fileOf("lora-modules")
		where := at(file, m.Line)
		switch {
		case !path.IsAbs(m.Path):
			c.Warnf(file, "put the adapter under the model directory and give its absolute path under the model mount", "%s: lora-modules[%d] %s: path %q is not an absolute path under the model mount, so the bundle does not capture the adapter", where, i, m.Name, m.Path)
		case mount == "":
			c.Warnf(file, "set model in the engine config to the absolute path of the mounted model directory", "%s: lora-modules[%d] %s: the model mount is unknown, so the lint cannot tell whether the bundle carries %s", where, i, m.Name, m.Path)
		default:
			c.Warnf(file, "put the adapter under the model directory so the bundle carries it", "%s: lora-modules[%d] %s: path %s is outside the model mount %s, so the bundle does not capture the adapter", where, i, m.Name, m.Path, mount)
		}
	}
}

var commitRe = regexp.MustCompile(`^[0-9a-f]{40}$`)

func checkEngineRevision(c *Context) {
	for _, run := range c.engineRuns() {
		cfg := run.cfg
		for _, r := range []struct{ flag, v string }{{"revision", cfg.Revision}, {"tokenizer-revision", cfg.TokenizerRev}, {"code-revision", cfg.CodeRevision}} {
			if r.v == "" || commitRe.MatchString(r.v) {
				continue
			}
			c.Warnf(run.fileOf(r.flag), "", "%s: %s %q is not a 40-hex commit: a branch or tag can move, so replicas may load different files", run.at(r.flag), r.flag, r.v)
		}
	}
}

// standaloneDetected are the standalone quantization files vLLM reads by itself when config.json
// has no quantization_config (ModelOpt's hf_quant_config.json).
var standaloneDetected = map[string]bool{"model/hf_quant_config.json": true}

func checkQuantMismatch(c *Context) {
	for _, r := range c.engineRuns() {
		checkQuantMismatchRun(c, r)
	}
}

func checkQuantMismatchRun(c *Context, r *engineRun) {
	cfg, file := r.cfg, r.fileOf("quantization")
	mq, err := c.QuantConfig()
	if err != nil {
		return // config-invalid reports it
	}
	if mq == nil {
		// Older compressed-tensors exports use "compression_config"; vLLM reads it like
		// quantization_config.
		if mc, err := c.ModelConfig(); err == nil && mc != nil {
			if cc, ok := mc.Raw["compression_config"].(map[string]any); ok {
				m, _ := cc["quant_method"].(string)
				mq = &modelrepo.QuantConfig{Source: "model/config.json (compression_config)", Method: orDefault(m, "compressed-tensors"), Raw: cc}
			}
		}
	}
	eq := strings.ToLower(strings.TrimSpace(cfg.Quantization))
	where := r.at("quantization")
	if eq == "" || eq == "none" {
		if r.unresolved("quantization") {
			return
		}
		if mq != nil && !strings.HasPrefix(mq.Source, "model/config.json") && mq.Source != "config.json" && !standaloneDetected[mq.Source] {
			c.Warnf(file, "set quantization in the engine config (e.g. quantization: "+orDefault(mq.Method, "gptq")+")",
				"%s: the model's quantization (%s) is only in %s, which vLLM does not use to detect the method; without quantization in the engine config vLLM loads the checkpoint as unquantized and fails on the packed tensors", file, orDefault(mq.Method, "unknown method"), mq.Source)
		}
		return
	}
	spec, known := modelrepo.EngineQuantMethods[eq]
	if mq == nil {
		switch {
		case known && spec.Online:
			// load-time quantization of an unquantized checkpoint
		case known:
			c.Errorf(file, "remove quantization from the engine config, or bundle the quantized checkpoint (with its quantization_config)", "%s: quantization %s needs a %s checkpoint, but the model has no quantization config (config.json quantization_config or a standalone quantization file): vLLM fails to load the weights", where, cfg.Quantization, strings.Join(spec.ModelMethods, "/"))
		default:
			c.Warnf(file, "check the method name against vLLM's --quantization choices", "%s: quantization %s is not a method the lint knows, and the model has no quantization config; if %s does not quantize at load time, vLLM fails to load the weights", where, cfg.Quantization, cfg.Quantization)
		}
		return
	}
	mm := modelrepo.NormalizeModelQuantMethod(mq.Method)
	if mm == "" {
		c.Warnf(file, "add quant_method to the model's quantization config", "%s: the model's quantization config (%s) does not name its method, so it cannot be compared with quantization %s", where, mq.Source, cfg.Quantization)
		return
	}
	accepted := []string{eq}
	if known {
		accepted = spec.ModelMethods
	}
	for _, a := range accepted {
		if a == mm {
			return
		}
	}
	c.Errorf(file, "", "%s: quantization %s does not match the model's quantization method %s (from %s): vLLM refuses to start (\"Quantization method specified in the model config (%s) does not match the quantization method specified in the `quantization` argument (%s)\")", where, cfg.Quantization, mm, mq.Source, mm, cfg.Quantization)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// allowLongMaxModelLen reports whether a vLLM container of the deployment sets
// VLLM_ALLOW_LONG_MAX_MODEL_LEN, which lets max-model-len exceed the derived length.
func (c *Context) allowLongMaxModelLen(r *engineRun) bool {
	for _, vc := range c.vllmContainers() {
		if r.vc != nil && vc != r.vc {
			continue
		}
		for _, e := range vc.c.Env {
			if e.Name == "VLLM_ALLOW_LONG_MAX_MODEL_LEN" {
				switch strings.ToLower(strings.TrimSpace(e.Value)) {
				case "1", "true", "yes":
					return true
				}
			}
		}
	}
	return false
}

// overriddenModelConfig applies the engine's hf-overrides to the model config, the way vLLM
// updates the Hugging Face config before deriving the context length.
func overriddenModelConfig(mc *modelrepo.ModelConfig, ov map[string]any) (*modelrepo.ModelConfig, bool) {
	if len(ov) == 0 {
		return mc, false
	}
	text := make(map[string]any, len(mc.Text)+len(ov))
	for k, v := range mc.Text {
		text[k] = v
	}
	changed := false
	for k, v := range ov {
		if k == "text_config" {
			if m, ok := v.(map[string]any); ok {
				for tk, tv := range m {
					text[tk] = tv
					changed = true
				}
			}
			continue
		}
		text[k] = v
		changed = true
	}
	out := *mc
	out.Text = text
	return &out, changed
}

func describeDerived(d modelrepo.DerivedMaxLen) string {
	var how string
	if d.Key == "" {
		how = "config.json has no length key, so vLLM assumes 2048"
	} else {
		how = d.Key
	}
	switch {
	case d.Rope != "" && d.Factor != 1:
		how += fmt.Sprintf(", × rope_scaling factor %s (%s)", strconv.FormatFloat(d.Factor, 'g', -1, 64), d.Rope)
		if d.Rope == "yarn" {
			how += " applied to original_max_position_embeddings"
		}
	case d.Rope != "":
		how += fmt.Sprintf("; rope_scaling %s does not extend it", d.Rope)
	default:
		how += "; no rope_scaling"
	}
	return how
}

func checkContextLength(c *Context) {
	for _, r := range c.engineRuns() {
		checkContextLengthRun(c, r)
	}
}

func checkContextLengthRun(c *Context, r *engineRun) {
	cfg, file := r.cfg, r.fileOf("max-model-len")
	if cfg.MaxModelLen <= 0 {
		return
	}
	mc, err := c.ModelConfig()
	if err != nil || mc == nil {
		return
	}
	mc, over := overriddenModelConfig(mc, cfg.HFOverrides)
	d, err := mc.MaxModelLen()
	if err != nil || cfg.MaxModelLen <= d.Len {
		return
	}
	src := "model/config.json"
	if over {
		src += " with the engine's hf-overrides"
	}
	msg := fmt.Sprintf("%s: max-model-len %d exceeds the %d tokens vLLM derives from %s (%s)", r.at("max-model-len"), cfg.MaxModelLen, d.Len, src, describeDerived(d))
	if c.allowLongMaxModelLen(r) {
		c.Warnf(file, "", "%s; the deployment sets VLLM_ALLOW_LONG_MAX_MODEL_LEN, so vLLM starts, but outputs past %d tokens may be wrong", msg, d.Len)
		return
	}
	c.Errorf(file, "", "%s: vLLM refuses to start", msg)
}
