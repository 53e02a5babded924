package lint

import (
	"errors"
	"io/fs"
)

const modelConfigPath = "model/config.json"

func checkConfigMissing(c *Context) {
	if c.HasModelFile("config.json") || c.HasModelFile("params.json") {
		return // params.json is the Mistral-format config vLLM falls back to
	}
	c.Errorf(modelConfigPath, "", "%s is not in the manifest: vLLM cannot start without the model's config.json (architectures, sizes, vocab_size)", modelConfigPath)
}

// modelConfigUnreadable reports whether config.json cannot be parsed for a reason another rule owns:
// absent from the manifest (config-missing), an LFS pointer (lfs-pointer) or absent from the
// source (manifest-file-missing).
func modelConfigUnreadable(c *Context, err error) bool {
	return !c.HasModelFile("config.json") || c.modelIsLFSPointer(modelConfigPath) || errors.Is(err, fs.ErrNotExist)
}

func checkConfigInvalid(c *Context) {
	_, err := c.ModelConfig()
	if err == nil || modelConfigUnreadable(c, err) {
		return
	}
	c.Errorf(modelConfigPath, "", "%v", err)
}

func checkConfigArchitecture(c *Context) {
	cfg, err := c.ModelConfig()
	if err != nil || cfg == nil {
		return
	}
	if len(cfg.Architectures) == 0 || cfg.Architectures[0] == "" {
		c.Errorf(modelConfigPath, "restore architectures (e.g. [\"LlamaForCausalLM\"]) from the base model's config.json",
			"%s: field architectures is missing or empty: vLLM cannot choose the model class to load", modelConfigPath)
	}
	if cfg.ModelType == "" {
		c.Errorf(modelConfigPath, "restore model_type (e.g. \"llama\") from the base model's config.json",
			"%s: field model_type is missing or empty: transformers cannot resolve the config class", modelConfigPath)
	}
}
