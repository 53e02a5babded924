package lint

import (
	"strings"
)

// checkProcessorMissing: a multimodal architecture (a vision_config, or a
// *ForConditionalGeneration class with one) makes vLLM load the Hugging Face processor at start-up,
// which needs preprocessor_config.json (or processor_config.json).
func checkProcessorMissing(c *Context) {
	cfg, err := c.ModelConfig()
	if err != nil || cfg == nil {
		return
	}
	if _, vision := cfg.Raw["vision_config"]; !vision {
		return
	}
	for _, f := range []string{"preprocessor_config.json", "processor_config.json"} {
		if c.HasModelFile(f) {
			return
		}
	}
	c.Errorf("model/preprocessor_config.json", "", "model/config.json declares a vision_config (%s), so vLLM loads the model's processor at start-up, but neither model/preprocessor_config.json nor model/processor_config.json is in the manifest", strings.Join(cfg.Architectures, ", "))
}

// checkHarmonyEncoding: vLLM renders gpt-oss chats through openai-harmony, which needs the
// o200k_base tiktoken encoding; on an offline host it must be on disk (TIKTOKEN_ENCODINGS_BASE
// or TIKTOKEN_RS_CACHE_DIR pointing at it), else the first chat fails trying to download it.
func checkHarmonyEncoding(c *Context) {
	cfg, err := c.ModelConfig()
	if err != nil || cfg == nil || cfg.ModelType != "gpt_oss" {
		return
	}
	for p := range c.ModelFiles() {
		if strings.HasSuffix(p, ".tiktoken") && strings.Contains(p, "o200k") {
			return
		}
	}
	c.Warnf("model/config.json", "", "model/config.json is gpt-oss: vLLM serves its chats through the harmony format, which loads the o200k_base tiktoken encoding, downloaded on first use; the bundle has no o200k_base.tiktoken, so an offline replica cannot serve chat")
}
