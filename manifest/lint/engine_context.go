package lint

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"lifeboat/manifest"
	"lifeboat/manifest/modelrepo"
)

// Shared, memoised views for the engine, LoRA and deployment rules. Memo keys start with "engine:".

// engineDoc is the manifest's engine config file, parsed.
type engineDoc struct {
	path    string                  // bundle path; "" when the manifest has no engine config
	cfg     *modelrepo.EngineConfig // nil when the file could not be read or is not a YAML mapping
	err     error                   // fatal parse error, or *modelrepo.EngineConfigError
	readErr error
}

func (c *Context) engineDoc() *engineDoc {
	v, _ := c.Memo("engine:config", func() (any, error) {
		d := &engineDoc{}
		files := c.Manifest.PartFiles(manifest.PartEngine)
		for _, f := range files {
			if f.Role == manifest.RoleEngineConfig {
				d.path = f.Path
				break
			}
		}
		if d.path == "" && len(files) > 0 {
			d.path = files[0].Path
		}
		if d.path == "" {
			return d, nil
		}
		data, err := c.ReadFile(d.path)
		if err != nil {
			d.readErr = err
			return d, nil
		}
		d.cfg, d.err = modelrepo.ParseEngineConfig(data, d.path)
		return d, nil
	})
	return v.(*engineDoc)
}

// engineCfg returns the parsed engine config and its bundle path, or nil.
func (c *Context) engineCfg() (*modelrepo.EngineConfig, string) {
	d := c.engineDoc()
	return d.cfg, d.path
}

// at formats "file:line" (or just the file when the line is unknown).
func at(file string, line int) string {
	if line > 0 {
		return file + ":" + strconv.Itoa(line)
	}
	return file
}

// engineModelPath is the directory vLLM loads the model from inside the container: the engine
// config's model, else the positional model of a vLLM container in the deployment files. It is
// "" when neither names an absolute path.
func (c *Context) engineModelPath() string {
	v, _ := c.Memo("engine:model-path", func() (any, error) {
		if cfg, _ := c.engineCfg(); cfg != nil && cfg.Model != "" {
			if path.IsAbs(cfg.Model) {
				return path.Clean(cfg.Model), nil
			}
			return "", nil
		}
		for _, vc := range c.vllmContainers() {
			if vc.inv.Model != "" && path.IsAbs(vc.inv.Model) {
				return path.Clean(vc.inv.Model), nil
			}
		}
		return "", nil
	})
	return v.(string)
}

// underMount maps an absolute container path below the model mount to a path relative to the
// model root ("" for the mount itself). ok is false when p is not below mount.
func underMount(mount, p string) (rel string, ok bool) {
	if mount == "" || !path.IsAbs(p) {
		return "", false
	}
	p = path.Clean(p)
	if p == mount {
		return "", true
	}
	prefix := mount + "/"
	if mount == "/" {
		prefix = "/"
	}
	if strings.HasPrefix(p, prefix) {
		return strings.TrimPrefix(p, prefix), true
	}
	return "", false
}

// modelPathExists reports whether model/rel is a file of the manifest or a directory holding one.
func (c *Context) modelPathExists(rel string) bool {
	if rel == "" {
		return len(c.ModelFiles()) > 0
	}
	if c.HasModelFile(rel) {
		return true
	}
	prefix := rel + "/"
	for f := range c.ModelFiles() {
		if strings.HasPrefix(f, prefix) {
			return true
		}
	}
	return false
}

// deployFile is one deployment file of the manifest, parsed according to its kind.
type deployFile struct {
	file    manifest.File
	yaml    bool
	docker  bool
	objs    []modelrepo.K8sObject
	froms   []modelrepo.DockerFrom
	err     error // parse error
	readErr error // could not be read (e.g. a large file not embedded and not in the source)
}

func (c *Context) deployFiles() []*deployFile {
	v, _ := c.Memo("engine:deploy", func() (any, error) {
		var out []*deployFile
		for _, f := range c.Manifest.PartFiles(manifest.PartDeployment) {
			d := &deployFile{file: f, yaml: modelrepo.IsYAMLFile(f.Path), docker: modelrepo.IsDockerfile(f.Path)}
			if !d.yaml && !d.docker {
				continue
			}
			data, err := c.ReadFile(f.Path)
			if err != nil {
				d.readErr = err
				out = append(out, d)
				continue
			}
			if d.yaml {
				d.objs, d.err = modelrepo.ParseKubernetesYAML(data, f.Path)
				if d.err != nil && strings.Contains(string(data), "{{") {
					d.err = errTemplate
				}
			} else {
				d.froms, d.err = modelrepo.ParseDockerfile(data, f.Path)
			}
			out = append(out, d)
		}
		return out, nil
	})
	return v.([]*deployFile)
}

var errTemplate = errors.New("template")

// vllmContainer is a Kubernetes container that runs a vLLM server.
type vllmContainer struct {
	file string
	obj  modelrepo.K8sObject
	c    modelrepo.Container
	inv  modelrepo.ServeInvocation
	// From the command line (engine_runs.go): the server start, its arguments and the settings it
	// runs; cfg is nil when no vLLM start was recognised in the command line.
	serve       modelrepo.ServeCommand
	args        *modelrepo.ServeArgs
	cfg         *modelrepo.EngineConfig
	readsEngine bool // --config names the bundle's engine config
}

func (c *Context) vllmContainers() []*vllmContainer {
	v, _ := c.Memo("engine:vllm-containers", func() (any, error) {
		var out []*vllmContainer
		engineBase := ""
		if p := c.engineDoc().path; p != "" {
			engineBase = path.Base(p)
		}
		for _, d := range c.deployFiles() {
			if d.err != nil {
				continue
			}
			for _, o := range d.objs {
				for _, ct := range o.Containers() {
					if ct.Kind != "container" {
						continue
					}
					inv := modelrepo.ParseServeCommand(ct.Image, ct.Command, ct.Args)
					if !inv.IsVLLM && inv.ConfigPath != "" {
						// --config alone is common; it means vLLM when it names the engine config.
						cp := strings.ToLower(inv.ConfigPath)
						inv.IsVLLM = strings.Contains(cp, "vllm") || engineBase != "" && path.Base(inv.ConfigPath) == engineBase
					}
					vc := &vllmContainer{file: d.file.Path, obj: o, c: ct, inv: inv}
					c.serveContainer(vc)
					if vc.inv.IsVLLM {
						out = append(out, vc)
					}
				}
			}
		}
		return out, nil
	})
	return v.([]*vllmContainer)
}

// engineAdapter is a LoRA adapter directory: found in the manifest (it has an adapter_config.json)
// or named by the engine's lora-modules.
type engineAdapter struct {
	dir     string                 // relative to the model root
	modules []modelrepo.LoRAModule // lora-modules entries that point here
	config  bool                   // adapter_config.json is in the manifest
	weights bool                   // adapter_model.safetensors or .bin is in the manifest
	cfg     *modelrepo.AdapterConfig
	err     error // parse error of adapter_config.json
	readErr error // could not read it (other than absent from the source)
}

// bundlePath is the adapter directory as a bundle path, with a trailing slash.
func (a *engineAdapter) bundlePath() string {
	if a.dir == "" {
		return "model/"
	}
	return "model/" + a.dir + "/"
}

func (a *engineAdapter) configPath() string { return a.bundlePath() + "adapter_config.json" }

// engineAdapters returns the adapters with the lora-modules of the engine config file.
func (c *Context) engineAdapters() []*engineAdapter {
	var r *engineRun
	if cfg, file := c.engineCfg(); cfg != nil {
		r = &engineRun{cfg: cfg, file: file}
	}
	return c.runAdapters(r)
}

// runAdapters returns the adapters with the lora-modules of one run (nil: none).
func (c *Context) runAdapters(r *engineRun) []*engineAdapter {
	key := "engine:adapters"
	if r != nil && r.vc != nil {
		key = fmt.Sprintf("engine:adapters:%p", r.vc)
	}
	v, _ := c.Memo(key, func() (any, error) {
		byDir := map[string]*engineAdapter{}
		get := func(dir string) *engineAdapter {
			a := byDir[dir]
			if a == nil {
				a = &engineAdapter{dir: dir}
				byDir[dir] = a
			}
			return a
		}
		for rel := range c.ModelFiles() {
			if path.Base(rel) == "adapter_config.json" {
				dir := path.Dir(rel)
				if dir == "." {
					dir = ""
				}
				get(dir)
			}
		}
		if r != nil {
			mount := r.mount(c)
			for _, m := range r.cfg.LoRAModules {
				if rel, ok := underMount(mount, m.Path); ok {
					a := get(rel)
					a.modules = append(a.modules, m)
				}
			}
		}
		var out []*engineAdapter
		for _, a := range byDir {
			join := func(f string) string {
				if a.dir == "" {
					return f
				}
				return a.dir + "/" + f
			}
			a.config = c.HasModelFile(join("adapter_config.json"))
			a.weights = c.HasModelFile(join("adapter_model.safetensors")) || c.HasModelFile(join("adapter_model.bin"))
			if a.config {
				data, err := c.ReadFile(a.configPath())
				switch {
				case err == nil:
					a.cfg, a.err = modelrepo.ParseAdapterConfig(data, a.configPath())
				case errors.Is(err, fs.ErrNotExist):
					// manifest-file-missing reports it
				default:
					a.readErr = err
				}
			}
			out = append(out, a)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].dir < out[j].dir })
		return out, nil
	})
	return v.([]*engineAdapter)
}
