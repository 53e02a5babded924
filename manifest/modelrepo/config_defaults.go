package modelrepo

import "strings"

// classDefaults are the defaults of transformers' config classes, by the language model's
// model_type, for the keys Lifeboat derives from: when config.json omits a key, vLLM sees the
// class default (published Gemma 3 multimodal configs omit max_position_embeddings and
// vocab_size from text_config), not "absent".
var classDefaults = map[string]map[string]int64{
	"llama":       {"max_position_embeddings": 2048, "vocab_size": 32000},
	"mistral":     {"max_position_embeddings": 131072, "vocab_size": 32000},
	"qwen2":       {"max_position_embeddings": 32768, "vocab_size": 151936},
	"qwen3":       {"max_position_embeddings": 32768, "vocab_size": 151936},
	"gemma":       {"max_position_embeddings": 8192, "vocab_size": 256000},
	"gemma2":      {"max_position_embeddings": 8192, "vocab_size": 256000},
	"gemma3_text": {"max_position_embeddings": 131072, "vocab_size": 262208},
	"deepseek_v3": {"max_position_embeddings": 4096, "vocab_size": 129280},
	"gpt_oss":     {"max_position_embeddings": 131072, "vocab_size": 201088},
}

// TextModelType is the language model's model_type: text_config's for multimodal models (Gemma 3
// multimodal configs may omit it: its class is gemma3_text), else the top level's.
func (c *ModelConfig) TextModelType() string {
	if t, ok := c.Text["model_type"].(string); ok && t != "" {
		return t
	}
	if _, nested := c.Raw["text_config"]; nested && c.ModelType == "gemma3" {
		return "gemma3_text"
	}
	return c.ModelType
}

// classDefault is transformers' default for key in the language model's config class.
func (c *ModelConfig) classDefault(key string) (int64, bool) {
	v, ok := classDefaults[c.TextModelType()][key]
	return v, ok
}

// ignoresRopeFactor reports the model types whose rope_scaling vLLM does not fold into the
// derived length: Gemma 3 uses it for its global layers only.
func (c *ModelConfig) ignoresRopeFactor() bool {
	return strings.Contains(c.TextModelType(), "gemma3") || strings.Contains(c.ModelType, "gemma3")
}
