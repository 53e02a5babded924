package lint

import (
	"errors"
	"path"
	"strings"

	"lifeboat/manifest/modelrepo"
)

// Checks of LoRA adapters: those the engine's lora-modules names and those in the bundle.

func checkLoRAMissing(c *Context) {
	for _, r := range c.engineRuns() {
		checkLoRAMissingRun(c, r)
	}
}

func checkLoRAMissingRun(c *Context, r *engineRun) {
	for _, a := range c.runAdapters(r) {
		if len(a.modules) == 0 || a.config && a.weights {
			continue
		}
		m := a.modules[0]
		where := at(r.fileOf("lora-modules"), m.Line)
		switch {
		case !c.modelPathExists(a.dir):
			c.Errorf(a.bundlePath(), "", "%s: lora-modules %s: path %s resolves to %s, which is not in the bundle: vLLM fails to load the adapter and aborts start-up", where, m.Name, m.Path, a.bundlePath())
		case !a.config && !a.weights:
			c.Errorf(a.bundlePath(), "", "%s: lora-modules %s: %s has neither adapter_config.json nor adapter_model.safetensors (.bin)", where, m.Name, a.bundlePath())
		case !a.config:
			c.Errorf(a.bundlePath(), "", "%s: lora-modules %s: %s has no adapter_config.json", where, m.Name, a.bundlePath())
		default:
			c.Errorf(a.bundlePath(), "", "%s: lora-modules %s: %s has no adapter_model.safetensors (or adapter_model.bin)", where, m.Name, a.bundlePath())
		}
	}
}

func checkLoRANotEnabled(c *Context) {
	for _, r := range c.engineRuns() {
		cfg := r.cfg
		if len(cfg.LoRAModules) == 0 || cfg.EnableLoRA || r.unresolved("enable-lora") {
			continue
		}
		why := "enable-lora is not set"
		if cfg.Has("enable-lora") {
			why = "enable-lora is false (" + r.at("enable-lora") + ")"
		}
		c.Errorf(r.fileOf("lora-modules"), "", "%s: lora-modules lists %d adapter(s) but %s: vLLM does not load them", r.at("lora-modules"), len(cfg.LoRAModules), why)
	}
}

func checkLoRAInvalid(c *Context) {
	for _, a := range c.engineAdapters() {
		if !a.config {
			continue
		}
		p := a.configPath()
		if a.readErr != nil {
			c.Warnf(p, "check that the file is readable", "cannot read %s: %v", p, a.readErr)
			continue
		}
		if a.err != nil {
			var ae *modelrepo.AdapterConfigError
			if errors.As(a.err, &ae) {
				c.Errorf(p, "", "%s: %s", p, strings.Join(ae.Problems, "; "))
			} else {
				c.Errorf(p, "", "%v", a.err)
			}
		}
		if a.cfg != nil && a.cfg.PEFTType != "" && !strings.EqualFold(a.cfg.PEFTType, "LORA") {
			c.Errorf(p, "vLLM serves LoRA adapters only; convert or retrain the adapter as LoRA", "%s: peft_type is %s, not LORA: vLLM cannot load it", p, a.cfg.PEFTType)
		}
	}
}

func checkLoRARank(c *Context) {
	for _, r := range c.engineRuns() {
		checkLoRARankRun(c, r)
	}
}

func checkLoRARankRun(c *Context, r *engineRun) {
	cfg := r.cfg
	if !cfg.EnableLoRA || r.unresolved("max-lora-rank") {
		return
	}
	limit := cfg.MaxLoRARank
	if !modelrepo.AllowedMaxLoRARank(limit) {
		c.Errorf(r.fileOf("max-lora-rank"), "", "%s: max-lora-rank %d is not one of vLLM's allowed values (1, 8, 16, 32, 64, 128, 256, 320, 512): vLLM refuses to start", r.at("max-lora-rank"), limit)
	}
	src := "the default"
	if cfg.Has("max-lora-rank") {
		src = r.at("max-lora-rank")
	}
	for _, a := range c.runAdapters(r) {
		if a.cfg == nil || a.cfg.R <= limit {
			continue
		}
		c.Errorf(a.configPath(), "", "%s: r = %d exceeds max-lora-rank %d (%s): vLLM refuses to load the adapter", a.configPath(), a.cfg.R, limit, src)
	}
}

func checkLoRAUnsupported(c *Context) {
	for _, a := range c.engineAdapters() {
		if a.cfg == nil {
			continue
		}
		if a.cfg.UseDoRA {
			c.Errorf(a.configPath(), "", "%s: use_dora is true: vLLM does not support DoRA adapters and refuses to load it", a.configPath())
		}
		if len(a.cfg.ModulesToSave) > 0 {
			c.Errorf(a.configPath(), "", "%s: modules_to_save is %v: vLLM supports only modules_to_save null and refuses to load it", a.configPath(), a.cfg.ModulesToSave)
		}
	}
}

// quantTokens are name parts that mark a quantized re-upload of the same model.
var quantTokens = map[string]bool{
	"awq": true, "gptq": true, "int4": true, "int8": true, "fp8": true, "fp4": true, "nvfp4": true, "mxfp4": true,
	"w4a16": true, "w8a8": true, "w8a16": true, "w4a8": true, "bnb": true, "4bit": true, "8bit": true,
	"gguf": true, "exl2": true, "quantized": true, "marlin": true, "dynamic": true, "mlx": true,
	"bf16": true, "fp16": true, "hf": true,
}

// modelNames returns the forms of a model identity that count as the same model: the name
// lower-cased, its last path element, and that element without quantization suffixes.
func modelNames(s string) []string {
	s = strings.ToLower(strings.TrimRight(strings.TrimSpace(s), "/"))
	if s == "" {
		return nil
	}
	last := path.Base(s)
	var kept []string
	for _, t := range strings.FieldsFunc(last, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		if !quantTokens[t] {
			kept = append(kept, t)
		}
	}
	return []string{s, last, strings.Join(kept, "-")}
}

func sameModel(a, b string) bool {
	na, nb := modelNames(a), modelNames(b)
	if na == nil || nb == nil {
		return false
	}
	return na[0] == nb[0] || na[1] == nb[1] || na[2] != "" && na[2] == nb[2]
}

func checkLoRABaseModel(c *Context) {
	cfg, _ := c.engineCfg()
	var ids []string
	add := func(s string) {
		if strings.TrimSpace(s) != "" {
			ids = append(ids, s)
		}
	}
	if mc, err := c.ModelConfig(); err == nil && mc != nil {
		add(mc.NameOrPath)
	}
	add(c.Manifest.Name())
	add(c.Manifest.Model.Descriptor.Name)
	if cfg != nil {
		for _, s := range cfg.ServedModelNames {
			add(s)
		}
	}
	if mp := c.engineModelPath(); mp != "" && mp != "/" {
		add(path.Base(mp))
	}
	for _, a := range c.engineAdapters() {
		if a.cfg == nil {
			continue
		}
		p := a.configPath()
		mine := append([]string{}, ids...)
		for _, m := range a.modules {
			if m.BaseModelName != "" {
				mine = append(mine, m.BaseModelName)
			}
		}
		base := a.cfg.BaseModel
		switch {
		case strings.TrimSpace(base) == "":
			c.Warnf(p, "set base_model_name_or_path to the model the adapter was trained on", "%s: base_model_name_or_path is not set, so the lint cannot check that the adapter belongs to this model", p)
			continue
		case len(mine) == 0:
			c.Warnf(p, "build the manifest with --name, or keep _name_or_path in config.json", "%s: the adapter's base model is %s, but the served model has no known identity (no _name_or_path, manifest name or served-model-name) to compare with", p, base)
			continue
		}
		for _, id := range mine {
			if sameModel(base, id) {
				base = ""
				break
			}
		}
		if base == "" {
			continue
		}
		c.Errorf(p, "", "%s: the adapter was trained on %s, which matches none of the served model's names (%s): vLLM loads it anyway and produces wrong outputs", p, a.cfg.BaseModel, strings.Join(dedupe(mine), ", "))
	}
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
