package modelrepo

import (
	"strings"
	"testing"
)

func TestParseModelConfig(t *testing.T) {
	c, err := ParseModelConfig([]byte(`{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "_name_or_path": "meta-llama/x",
		"vocab_size": 128256, "torch_dtype": "bfloat16", "max_position_embeddings": 131072,
		"quantization_config": {"quant_method": "AWQ", "bits": 4, "group_size": 128, "zero_point": true}}`), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.Architectures[0] != "LlamaForCausalLM" || c.ModelType != "llama" || c.NameOrPath != "meta-llama/x" || c.VocabSize != 128256 || c.DType != "bfloat16" {
		t.Errorf("parsed %+v", c)
	}
	if q := c.Quantization; q == nil || q.Method != "awq" || q.Bits != 4 || q.GroupSize != 128 || q.Source != "config.json" {
		t.Errorf("quantization %+v", q)
	}
	// multimodal: vocab_size comes from text_config; transformers v5 writes dtype
	mm, err := ParseModelConfig([]byte(`{"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "dtype": "bfloat16", "text_config": {"vocab_size": 262208, "max_position_embeddings": 131072}}`), "config.json")
	if err != nil || mm.VocabSize != 262208 || mm.DType != "bfloat16" {
		t.Errorf("multimodal: %v %+v", err, mm)
	}
	for _, tc := range []struct{ in, want string }{
		{`[]`, "not a JSON object"},
		{`null`, "not a JSON object"},
		{`{"architectures": "Llama"}`, "field architectures: want a list of strings, got a string"},
		{`{"architectures": [1]}`, "field architectures[0]: want a string, got a number"},
		{`{"model_type": 3}`, "field model_type: want a string"},
		{`{"vocab_size": "32000"}`, "field vocab_size: want an integer, got a string"},
		{`{"vocab_size": 1.5}`, "field vocab_size: want an integer, got 1.5"},
		{`{"quantization_config": "awq"}`, "field quantization_config: want an object"},
		{`{"quantization_config": {"bits": "4"}}`, "quantization config: field bits"},
		{`{"torch_dtype": {}}`, "field torch_dtype"},
	} {
		if _, err := ParseModelConfig([]byte(tc.in), "config.json"); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "config.json: ") {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestMaxModelLen(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		key  string
		rope string
	}{
		{`{}`, 2048, "", ""},
		{`{"max_position_embeddings": 4096, "seq_length": 2048}`, 2048, "seq_length", ""},
		{`{"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}}`, 131072, "max_position_embeddings", "llama3"},
		{`{"max_position_embeddings": 32768, "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}`, 131072, "max_position_embeddings", "yarn"},
		{`{"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 2}}`, 8192, "max_position_embeddings", "linear"},
		{`{"max_position_embeddings": 4096, "rope_parameters": {"rope_type": "default"}}`, 4096, "max_position_embeddings", "default"},
		{`{"text_config": {"max_position_embeddings": 131072}, "max_position_embeddings": 10}`, 131072, "max_position_embeddings", ""},
	} {
		c, err := ParseModelConfig([]byte(tc.in), "config.json")
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.MaxModelLen()
		if err != nil || d.Len != tc.want || d.Key != tc.key || d.Rope != tc.rope {
			t.Errorf("%s: got %+v %v, want %d via %q rope %q", tc.in, d, err, tc.want, tc.key, tc.rope)
		}
	}
	for _, in := range []string{
		`{"max_position_embeddings": "4096"}`,
		`{"rope_scaling": "linear"}`,
		`{"rope_scaling": {"type": "linear", "factor": "2"}}`,
	} {
		c, err := ParseModelConfig([]byte(in), "config.json")
		if err != nil {
			continue
		}
		if _, err := c.MaxModelLen(); err == nil {
			t.Errorf("%s: MaxModelLen accepted it", in)
		}
	}
}

func TestParseQuantConfig(t *testing.T) {
	for _, tc := range []struct {
		in, method string
		bits       int
	}{
		{`{"bits": 4, "group_size": 128, "desc_act": false}`, "gptq", 4},
		{`{"w_bit": 4, "q_group_size": 128, "zero_point": true}`, "awq", 4},
		{`{"quantization": {"quant_algo": "FP8"}}`, "modelopt", 0},
		{`{"quant_method": "FP8"}`, "fp8", 0},
	} {
		q, err := ParseQuantConfig([]byte(tc.in), "quantize_config.json")
		if err != nil || q.Method != tc.method || q.Bits != tc.bits {
			t.Errorf("%s: %v %+v", tc.in, err, q)
		}
	}
	if _, err := ParseQuantConfig([]byte(`[1]`), "quantize_config.json"); err == nil || !strings.HasPrefix(err.Error(), "quantize_config.json: ") {
		t.Errorf("bad quant config: %v", err)
	}
}
