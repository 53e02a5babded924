package lint

import (
	"errors"
	"io/fs"
	"path"
	"sort"
	"strings"

	"lifeboat/manifest"
	"lifeboat/manifest/modelrepo"
)

// Shared, memoised views of the model repository used by the model rules (and by other rule sets:
// SafetensorsHeaders and QuantConfig are part of the Context API). Memo keys start with "model:".

// modelSafetensorsScan is the result of reading every .safetensors header of the model.
type modelSafetensorsScan struct {
	valid map[string]*modelrepo.SafetensorsHeader // bundle path → header
	bad   map[string]error                        // bundle path → why the header is unusable
}

// SafetensorsHeaders returns the parsed headers of every .safetensors file of the model — weight
// shards and LoRA adapter files — keyed by bundle path (model/…). Only valid headers are returned;
// the safetensors-header rule reports the others. Only the headers are read, using the sizes the
// manifest records, so a truncated file is caught without reading its data.
func (c *Context) SafetensorsHeaders() map[string]*modelrepo.SafetensorsHeader {
	return c.modelSafetensorsScan().valid
}

func (c *Context) modelSafetensorsScan() *modelSafetensorsScan {
	v, _ := c.Memo("model:safetensors", func() (any, error) {
		s := &modelSafetensorsScan{valid: map[string]*modelrepo.SafetensorsHeader{}, bad: map[string]error{}}
		if c.Src == nil {
			return s, nil
		}
		for _, f := range c.Manifest.PartFiles(manifest.PartModel) {
			if !strings.HasSuffix(strings.ToLower(f.Path), ".safetensors") || c.modelIsLFSPointer(f.Path) {
				continue
			}
			h, err := modelrepo.ReadSafetensorsHeader(c.ReaderAt(f.Path), f.Size)
			switch {
			case err == nil:
				s.valid[f.Path] = h
			case errors.Is(err, fs.ErrNotExist):
				// manifest-file-missing reports it
			default:
				s.bad[f.Path] = err
			}
		}
		return s, nil
	})
	return v.(*modelSafetensorsScan)
}

// QuantConfig returns the model's quantization config: config.json's quantization_config, else
// the first standalone quantization file found (quantize_config.json, quant_config.json,
// hf_quant_config.json, quantization_config.json). It returns nil, nil when there is none, and the
// parse error when config.json or the standalone file does not parse.
func (c *Context) QuantConfig() (*modelrepo.QuantConfig, error) {
	v, err := c.Memo("model:quantconfig", func() (any, error) {
		cfg, err := c.ModelConfig()
		if err != nil {
			return nil, err
		}
		if cfg != nil && cfg.Quantization != nil {
			return cfg.Quantization, nil
		}
		for _, rel := range []string{"quantize_config.json", "quant_config.json", "hf_quant_config.json", "quantization_config.json"} {
			if !c.HasModelFile(rel) || c.modelIsLFSPointer("model/"+rel) {
				continue
			}
			data, err := c.ReadFile("model/" + rel)
			if err != nil {
				return nil, err
			}
			return modelrepo.ParseQuantConfig(data, "model/"+rel)
		}
		return (*modelrepo.QuantConfig)(nil), nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*modelrepo.QuantConfig), nil
}

// modelLFSHit is a model file found to be a Git LFS pointer.
type modelLFSHit struct {
	pointer *modelrepo.LFSPointer // nil when the pointer text is malformed
	err     error
}

// lfsPointers finds the model files that are Git LFS pointers, reading only files the manifest
// records as smaller than a pointer can be.
func (c *Context) modelLFSPointers() map[string]modelLFSHit {
	v, _ := c.Memo("model:lfs", func() (any, error) {
		out := map[string]modelLFSHit{}
		if c.Src == nil {
			return out, nil
		}
		for _, f := range c.Manifest.PartFiles(manifest.PartModel) {
			if f.Size <= 0 || f.Size >= modelrepo.MaxLFSPointerSize {
				continue
			}
			data, err := c.ReadFile(f.Path)
			if err != nil || !modelrepo.LooksLikeLFSPointer(data) {
				continue
			}
			p, err := modelrepo.ParseLFSPointer(data, f.Path)
			out[f.Path] = modelLFSHit{p, err}
		}
		return out, nil
	})
	return v.(map[string]modelLFSHit)
}

// isLFSPointer reports whether a bundle file is an LFS pointer; rules that parse files skip those,
// since lfs-pointer already names the problem.
func (c *Context) modelIsLFSPointer(p string) bool {
	_, ok := c.modelLFSPointers()[p]
	return ok
}

// readModelFile reads model/rel for parsing. skip is true when the file should not be parsed: it
// is an LFS pointer, or absent from the source (manifest-file-missing reports that).
func (c *Context) modelReadFile(rel string) (data []byte, skip bool, err error) {
	p := "model/" + rel
	if c.modelIsLFSPointer(p) {
		return nil, true, nil
	}
	data, err = c.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	return data, false, err
}

// topLevelModelFiles returns the files directly in the model root, sorted.
func (c *Context) modelTopLevelFiles() []string {
	var out []string
	for rel := range c.ModelFiles() {
		if !strings.Contains(rel, "/") {
			out = append(out, rel)
		}
	}
	sort.Strings(out)
	return out
}

// modelShards returns the bundle paths of the model's own top-level .safetensors weight files,
// sorted. Mistral's consolidated*.safetensors (the mistral-format copy of the same weights) are
// left out when Hugging Face format shards exist.
func (c *Context) modelShards() []string {
	var hf, consolidated []string
	for _, rel := range c.modelTopLevelFiles() {
		f := c.ModelFiles()[rel]
		if f.Role != manifest.RoleWeights || path.Ext(strings.ToLower(rel)) != ".safetensors" {
			continue
		}
		if strings.HasPrefix(rel, "consolidated") {
			consolidated = append(consolidated, f.Path)
		} else {
			hf = append(hf, f.Path)
		}
	}
	if len(hf) > 0 {
		return hf
	}
	return consolidated
}

// modelEngineConfig is what the engine config supplies in place of model files.
type modelEngineConfig struct {
	model            string
	tokenizer        string
	chatTemplate     string
	generationConfig string
	trustRemoteCode  bool
}

// modelEngineOverrides reads model, tokenizer, chat-template and generation-config from the engine config files of
// the manifest; parse problems are the engine rules' business and are ignored here.
func (c *Context) modelEngineOverrides() modelEngineConfig {
	v, _ := c.Memo("model:engine-overrides", func() (any, error) {
		var o modelEngineConfig
		for _, f := range c.Manifest.PartFiles(manifest.PartEngine) {
			if f.Role != manifest.RoleEngineConfig {
				continue
			}
			data, err := c.ReadFile(f.Path)
			if err != nil {
				continue
			}
			cfg, _ := modelrepo.ParseEngineConfig(data, f.Path)
			if cfg == nil {
				continue
			}
			if cfg.Model != "" {
				o.model = cfg.Model
			}
			if cfg.Tokenizer != "" {
				o.tokenizer = cfg.Tokenizer
			}
			if cfg.ChatTemplate != "" {
				o.chatTemplate = cfg.ChatTemplate
			}
			if cfg.GenerationConfig != "" {
				o.generationConfig = cfg.GenerationConfig
			}
			o.trustRemoteCode = o.trustRemoteCode || cfg.TrustRemoteCode
		}
		return o, nil
	})
	return v.(modelEngineConfig)
}
