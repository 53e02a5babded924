package lint

import (
	"path"
	"strings"

	"lifeboat/manifest/modelrepo"
)

// One rule set, two sources: the engine rules run on the engine config file as the bundle holds
// it, and on the settings each vLLM container of the deployment files really runs — its command
// line, merged with the engine config when it reads it with --config.

// engineRun is one engine configuration the rules check.
type engineRun struct {
	cfg  *modelrepo.EngineConfig
	file string         // the engine config, or the deploy file of the container
	line int            // where the container starts vLLM; 0 for the engine config
	vc   *vllmContainer // nil for the engine config file alone
}

// at formats where flag was set ("file:line"), or where the run starts when it was not.
func (r *engineRun) at(flag string) string {
	if k, ok := r.cfg.Key(flag); ok && k.File != "" {
		return k.At()
	}
	return at(r.file, r.line)
}

// fileOf is the file that set flag: the finding's path.
func (r *engineRun) fileOf(flag string) string {
	if k, ok := r.cfg.Key(flag); ok && k.File != "" {
		return k.File
	}
	return r.file
}

// who names the container of a deployment run, for messages: "" for the engine config.
func (r *engineRun) who() string {
	if r.vc == nil {
		return ""
	}
	return describeContainer(r.vc.obj.Kind, r.vc.obj.Name, r.vc.c.Kind, r.vc.c.Name)
}

// mount is the directory the run loads the model from, when it is an absolute path.
func (r *engineRun) mount(c *Context) string {
	if r.vc == nil {
		return c.engineModelPath()
	}
	if r.cfg.Model != "" && path.IsAbs(r.cfg.Model) && !r.unresolved("model") {
		return path.Clean(r.cfg.Model)
	}
	return ""
}

// unresolved reports whether flag's value is unknown to the lint (a $(VAR) from a Secret, …).
func (r *engineRun) unresolved(flag string) bool {
	for _, u := range r.cfg.Unresolved {
		if u.Key.Flag == flag {
			return true
		}
	}
	return false
}

// engineRuns returns the engine config file's run (when it parsed) and one per vLLM container
// whose command line was read.
func (c *Context) engineRuns() []*engineRun {
	v, _ := c.Memo("engine:runs", func() (any, error) {
		var out []*engineRun
		if cfg, file := c.engineCfg(); cfg != nil {
			out = append(out, &engineRun{cfg: cfg, file: file})
		}
		for _, vc := range c.vllmContainers() {
			if vc.cfg == nil {
				continue
			}
			out = append(out, &engineRun{cfg: vc.cfg, file: vc.file, line: vc.serve.Line, vc: vc})
		}
		return out, nil
	})
	return v.([]*engineRun)
}

// readsEngineConfig reports whether a --config path names the bundle's engine config: the
// deployment mounts it from a ConfigMap or the image copies it, so only its file name can be
// compared.
func (c *Context) readsEngineConfig(configPath string) bool {
	p := c.engineDoc().path
	return p != "" && configPath != "" && path.Base(configPath) == path.Base(p)
}

// serveContainer reads the vLLM server a container starts, with the settings it runs.
func (c *Context) serveContainer(vc *vllmContainer) {
	sc, ok := modelrepo.FindServeCommand(vc.c)
	if !ok {
		return
	}
	vc.serve = sc
	vc.args = modelrepo.ParseServeArgs(sc.Args, vc.file)
	cp, _, _ := vc.args.ConfigPath()
	var data []byte
	d := c.engineDoc()
	if c.readsEngineConfig(cp) && d.readErr == nil {
		data, _ = c.ReadFile(d.path)
		vc.readsEngine = true
	}
	vc.cfg = vc.args.EngineConfig(data, d.path, sc.Positional)
	vc.inv.IsVLLM = true
	if vc.inv.ConfigPath == "" {
		vc.inv.ConfigPath = cp
	}
	if vc.cfg.Model != "" && !strings.Contains(vc.cfg.Model, "$") {
		vc.inv.Model = vc.cfg.Model
	} else if len(vc.cfg.Unresolved) > 0 {
		for _, u := range vc.cfg.Unresolved {
			if u.Key.Flag == "model" {
				vc.inv.Model = ""
			}
		}
	}
}
