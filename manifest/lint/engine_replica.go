package lint

import (
	"fmt"
	"path"
	"strings"

	"lifeboat/manifest/modelrepo"
)

// Checks that the three parts of the manifest describe one replica: the vLLM container of the
// deployment loads the bundle's model, reads the bundle's engine config, and serves the name the
// engine config says; where the command line overrides the engine config, say which value runs.

// vllmDefaultModel is the model vLLM loads when neither --model nor a positional model is given
// (vllm/config/model.py ModelConfig.model).
const vllmDefaultModel = "Qwen/Qwen3-0.6B"

func checkReplicaMismatch(c *Context) {
	d := c.engineDoc()
	hasModel := len(c.ModelFiles()) > 0
	for _, r := range c.engineRuns() {
		if r.vc == nil {
			continue
		}
		vc, who := r.vc, r.who()
		start := at(vc.file, vc.serve.Line)
		// The model.
		model, modelAt := r.cfg.Model, r.at("model")
		switch {
		case r.unresolved("model"):
			why, mk := "", modelrepo.EngineKey{}
			mk, _ = r.cfg.Key("model")
			for _, u := range r.cfg.Unresolved {
				if u.Key.Flag == "model" {
					why = u.Why
				}
			}
			c.Warnf(r.fileOf("model"), "give the model path as a literal value (or a literal env value) so the lint can check it is the bundle's", "%s: %s loads model %s, whose value is unknown to the lint (%s): whether the replica serves the bundle's model cannot be checked", modelAt, who, mk.Value, why)
		case !hasModel:
		case model == "" && vc.serve.Entry != "" && len(vc.serve.Args) == 0 && len(vc.c.Exec.Command) == 0:
			// The image's default command decides; a Dockerfile CMD is not read.
		case model == "":
			c.Errorf(vc.file, "pass the directory where the deployment mounts the bundled model (vllm serve /models/NAME, or --model)", "%s: %s starts vLLM (%s) without a model, so vLLM loads its default %s, not the bundle's model: the model, engine config and deployment do not describe one replica", start, who, vc.serve.Entry, vllmDefaultModel)
		case !path.IsAbs(model):
			c.Errorf(r.fileOf("model"), "serve the bundled model: mount it and pass its directory (vllm serve /models/NAME) instead of a Hub id", "%s: %s loads %s, a Hugging Face Hub id (or a relative path), not the bundle's model: a replica downloads other bytes than the ones Lifeboat verified (and fails when the Hub is unreachable); the model, engine config and deployment do not describe one replica", modelAt, who, model)
		}
		// The engine config.
		if d.path == "" || d.readErr != nil {
			continue
		}
		cp, cpLine, cpUnknown := vc.args.ConfigPath()
		switch {
		case vc.readsEngine:
			for _, o := range r.cfg.Overrides {
				if o.Flag.File == "" || o.File.Value == o.Flag.Value {
					continue
				}
				c.Warnf(o.Flag.File, "set the value in one place: the engine config or the command line", "%s: %s sets %s %s, and the engine config it reads sets %s %s (%s): the replica runs %s (vLLM puts the config file's flags before the command line's; the last wins)", o.Flag.At(), who, o.Flag.Key, o.Flag.Value, o.File.Key, o.File.Value, o.File.At(), o.Flag.Value)
			}
		case cpUnknown:
			c.Warnf(vc.file, "", "%s: %s reads --config %s, whose value is unknown to the lint: whether it is the bundle's engine config %s cannot be checked", at(vc.file, cpLine), who, cp, d.path)
		case len(vc.serve.Args) == 0 && len(vc.c.Exec.Command) == 0:
			// The image's default command decides (e.g. CMD ["--config", …] in the Dockerfile).
		default:
			what := "never reads the bundle's engine config " + d.path + " (no --config)"
			if cp != "" {
				what = fmt.Sprintf("reads --config %s (%s), not the bundle's engine config %s", cp, at(vc.file, cpLine), d.path)
			}
			diffs := engineDiffs(c, r)
			msg := fmt.Sprintf("%s: %s %s: the replica runs its command-line flags and vLLM's defaults, not the settings the manifest carries; the model, engine config and deployment do not describe one replica", start, who, what)
			if len(diffs) > 0 {
				msg += "; they disagree on " + strings.Join(diffs, "; ")
			}
			hint := fmt.Sprintf("pass --config with the path where the deployment mounts %s (e.g. args: [\"--config\", \"/etc/vllm/%s\"])", path.Base(d.path), path.Base(d.path))
			if cp != "" {
				// Another file name may still hold the same settings (a ConfigMap key renamed): the
				// lint cannot tell, so it warns.
				c.Warnf(vc.file, hint, "%s", msg)
				continue
			}
			c.Errorf(vc.file, hint, "%s", msg)
		}
	}
}

// engineDiffs lists the settings a container that does not read the engine config runs with a
// value different from the engine config's.
func engineDiffs(c *Context, r *engineRun) []string {
	file, _ := c.engineCfg()
	if file == nil {
		return nil
	}
	var out []string
	for _, fk := range file.Keys {
		if fk.Flag == "" || fk.Form == modelrepo.KeyDotted {
			continue
		}
		ck, ok := r.cfg.Key(fk.Flag)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s (%s sets %s; the replica runs vLLM's default)", fk.Flag, fk.At(), fk.Value))
		case ck.Value != fk.Value:
			out = append(out, fmt.Sprintf("%s (%s sets %s; the replica runs %s from %s)", fk.Flag, fk.At(), fk.Value, ck.Value, ck.At()))
		}
		if len(out) == 6 {
			out = append(out, "…")
			break
		}
	}
	return out
}

// servedNames is what clients must send as "model": served-model-name, else the model as given.
func servedNames(cfg *modelrepo.EngineConfig) []string {
	if len(cfg.ServedModelNames) > 0 {
		return cfg.ServedModelNames
	}
	if cfg.Model != "" {
		return []string{cfg.Model}
	}
	return []string{vllmDefaultModel}
}

func checkServedModelName(c *Context) {
	file, filePath := c.engineCfg()
	for _, r := range c.engineRuns() {
		if r.vc == nil {
			continue
		}
		if r.unresolved("served-model-name") {
			continue
		}
		names := servedNames(r.cfg)
		for i, n := range names {
			if strings.TrimSpace(n) == "" {
				c.Errorf(r.fileOf("served-model-name"), "", "%s: %s: served-model-name %d is empty: no client can name the model", r.at("served-model-name"), r.who(), i+1)
			}
		}
		if file == nil || len(file.ServedModelNames) == 0 || r.unresolved("model") {
			continue
		}
		want := file.ServedModelNames[0]
		found := false
		for _, n := range names {
			if n == want {
				found = true
			}
		}
		if found {
			continue
		}
		where := r.at("served-model-name")
		if !r.cfg.Has("served-model-name") {
			where = r.at("model")
		}
		c.Errorf(r.fileOf("served-model-name"), "serve the name the engine config gives (--served-model-name "+want+"), or read the engine config with --config", "%s: %s serves the model as %s, but the engine config names it %s (%s): clients and routers that ask for %s get vLLM's 404 (\"The model `%s` does not exist.\")", where, r.who(), strings.Join(names, ", "), want, at(filePath, file.Line("served-model-name")), want, want)
	}
}
