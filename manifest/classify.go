package manifest

import (
	"path"
	"strings"
)

// Classify returns the role of a file of the model repository. rel is relative to the model root;
// adapterDirs holds the directories (relative, "." for the root) that contain an
// adapter_config.json, because weights inside them belong to a LoRA adapter, not to the model.
func Classify(rel string, adapterDirs map[string]bool) Role {
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	lower := strings.ToLower(base)
	if adapterDirs[dir] && (lower == "adapter_config.json" || strings.HasPrefix(lower, "adapter_model")) {
		return RoleLoRAAdapter
	}
	switch lower {
	case "config.json", "params.json":
		if dir == "." {
			return RoleModelConfig
		}
	case "model.safetensors.index.json", "pytorch_model.bin.index.json", "consolidated.safetensors.index.json":
		return RoleWeightIndex
	case "tokenizer.json", "tokenizer.model", "vocab.json", "merges.txt", "vocab.txt", "tekken.json", "spiece.model", "sentencepiece.bpe.model":
		return RoleTokenizer
	case "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json":
		return RoleTokenizerConfig
	case "chat_template.jinja", "chat_template.json":
		return RoleChatTemplate
	case "generation_config.json":
		return RoleGenerationConfig
	case "quantize_config.json", "quant_config.json", "hf_quant_config.json", "quantization_config.json":
		return RoleQuantConfig
	case "license", "license.md", "license.txt", "readme.md", "notice", "notice.md", "use_policy.md":
		return RoleDoc
	}
	switch ext := path.Ext(lower); ext {
	case ".safetensors", ".bin", ".pt", ".pth", ".gguf", ".ckpt", ".h5", ".msgpack", ".onnx":
		return RoleWeights
	case ".tiktoken":
		return RoleTokenizer
	case ".jinja":
		return RoleChatTemplate
	case ".py":
		return RoleRemoteCode
	case ".md", ".txt", ".pdf":
		return RoleDoc
	}
	if strings.HasPrefix(lower, "license") {
		return RoleDoc
	}
	return RoleOther
}

// ModelConfigEmbedLimit is the largest model configuration file embedded in the manifest: enough
// for any published config.json, generation_config.json or chat template, and for
// tokenizer_config.json with a few thousand added tokens.
const ModelConfigEmbedLimit = 256 << 10

// ModelEmbeddable reports whether a model file of this bundle path and role is a configuration
// file the manifest may embed (when it is at most ModelConfigEmbedLimit bytes), so that `manifest
// diff` can show what changed inside it (vocab_size, rope_scaling, EOS ids, the chat template).
// Weights, weight indexes and tokenizer vocabularies are never embedded: they are large, and a
// replica must carry them anyway.
func ModelEmbeddable(p string, role Role) bool {
	switch role {
	case RoleModelConfig, RoleGenerationConfig, RoleTokenizerConfig, RoleChatTemplate, RoleQuantConfig:
		return true
	case RoleLoRAAdapter, RoleOther:
		switch path.Base(p) {
		case "adapter_config.json", "preprocessor_config.json", "processor_config.json", "video_preprocessor_config.json":
			return true
		}
	}
	return false
}
