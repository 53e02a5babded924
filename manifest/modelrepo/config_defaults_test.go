package modelrepo

import "testing"

// Keys a config omits take the config class's default, as vLLM sees them; Gemma 3's rope factor
// is not applied to the derived length.
func TestConfigClassDefaultsAndGemma3Rope(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		vocab     int64
		maxLen    int64
	}{
		{"gemma 3 multimodal, text_config without lengths", `{"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
		  "text_config": {"hidden_size": 2560, "model_type": "gemma3_text", "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}}`, 262208, 131072},
		{"gemma 3 multimodal, text_config without model_type", `{"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
		  "text_config": {"hidden_size": 2560}}`, 262208, 131072},
		{"gemma 3 text with a linear factor", `{"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "vocab_size": 262144,
		  "max_position_embeddings": 32768, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}`, 262144, 32768},
		{"qwen3 without lengths", `{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}`, 151936, 32768},
		{"llama with a linear factor (applied)", `{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 32000,
		  "max_position_embeddings": 4096, "rope_scaling": {"factor": 2.0, "type": "linear"}}`, 32000, 8192},
		{"unknown type without lengths", `{"architectures": ["X"], "model_type": "x"}`, 0, 2048},
	} {
		cfg, err := ParseModelConfig([]byte(c.doc), "config.json")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		d, err := cfg.MaxModelLen()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cfg.VocabSize != c.vocab || d.Len != c.maxLen {
			t.Errorf("%s: vocab %d, max len %d; want %d, %d", c.name, cfg.VocabSize, d.Len, c.vocab, c.maxLen)
		}
	}
}
