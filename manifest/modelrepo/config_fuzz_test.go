package modelrepo

import (
	"strings"
	"testing"
)

// FuzzModelConfig checks ParseModelConfig and MaxModelLen never panic, that errors name the file,
// and that a derived context length is positive.
func FuzzModelConfig(f *testing.F) {
	addFileSeed(f, "testdata/seeds/config.json") // a real file written by the sample generator
	for _, s := range []string{
		`{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128256, "max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}`,
		`{"max_position_embeddings": 32768, "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}`,
		`{"text_config": {"vocab_size": 262208, "rope_parameters": {"rope_type": "linear", "factor": 8}}, "quantization_config": {"quant_method": "awq", "bits": 4}}`,
		`{"seq_length": 1e3, "n_positions": -5}`,
		`{"rope_scaling": {"type": "dynamic", "factor": 1e308}, "max_position_embeddings": 4096}`,
		`[]`, `null`, `{"vocab_size": 1e19}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseModelConfig(data, "config.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config.json: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		d, err := c.MaxModelLen()
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if d.Len <= 0 {
			t.Fatalf("derived context length %d from %s", d.Len, data)
		}
	})
}
