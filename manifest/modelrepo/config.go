package modelrepo

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// ModelConfig is what Lifeboat reads from a Hugging Face config.json.
type ModelConfig struct {
	Raw           map[string]any // the whole document
	Architectures []string
	ModelType     string
	NameOrPath    string // "_name_or_path", the model's identity when the exporter wrote it
	VocabSize     int64  // 0 when absent
	DType         string // torch_dtype, or dtype (transformers v5)
	Quantization  *QuantConfig
	// Text is the language model's block: text_config for multimodal models, else Raw.
	Text map[string]any
}

// QuantConfig is a quantization_config block or a standalone quantization config file.
type QuantConfig struct {
	Source    string // file the block came from, e.g. "config.json" or "quantize_config.json"
	Method    string // quant_method, lower case; "" when the file does not say
	Bits      int
	GroupSize int
	Raw       map[string]any
}

// LengthKeys are the config keys vLLM takes the minimum over to derive the context length.
var LengthKeys = []string{"max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "max_sequence_length", "max_seq_length", "seq_len"}

// ParseModelConfig parses config.json. name is used in error messages.
func ParseModelConfig(data []byte, name string) (*ModelConfig, error) {
	raw, err := decodeObject(data, name)
	if err != nil {
		return nil, err
	}
	c := &ModelConfig{Raw: raw, Text: raw}
	if tc, ok := raw["text_config"].(map[string]any); ok {
		c.Text = tc
	}
	if v, ok := raw["architectures"]; ok && v != nil {
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: field architectures: want a list of strings, got %s", name, typeName(v))
		}
		for i, a := range list {
			s, ok := a.(string)
			if !ok {
				return nil, fmt.Errorf("%s: field architectures[%d]: want a string, got %s", name, i, typeName(a))
			}
			c.Architectures = append(c.Architectures, s)
		}
	}
	if c.ModelType, err = optString(raw, "model_type"); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if c.NameOrPath, err = optString(raw, "_name_or_path"); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if c.DType, err = optString(raw, "torch_dtype"); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if c.DType == "" {
		if c.DType, err = optString(raw, "dtype"); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	vs, ok, err := Int(c.Text, "vocab_size")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !ok {
		if vs, _, err = Int(raw, "vocab_size"); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	c.VocabSize = vs
	if c.VocabSize == 0 {
		if _, present := c.Text["vocab_size"]; !present {
			c.VocabSize, _ = c.classDefault("vocab_size")
		}
	}
	if q, ok := raw["quantization_config"]; ok && q != nil {
		qm, ok := q.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: field quantization_config: want an object, got %s", name, typeName(q))
		}
		if c.Quantization, err = quantFrom(qm, name); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ParseQuantConfig parses a standalone quantization config file (quantize_config.json,
// quant_config.json, hf_quant_config.json). ModelOpt's hf_quant_config nests its block under
// "quantization" and names the algorithm "quant_algo".
func ParseQuantConfig(data []byte, name string) (*QuantConfig, error) {
	raw, err := decodeObject(data, name)
	if err != nil {
		return nil, err
	}
	if inner, ok := raw["quantization"].(map[string]any); ok {
		q, err := quantFrom(inner, name)
		if err != nil {
			return nil, err
		}
		if q.Method == "" {
			q.Method = "modelopt"
		}
		return q, nil
	}
	return quantFrom(raw, name)
}

func quantFrom(m map[string]any, name string) (*QuantConfig, error) {
	q := &QuantConfig{Source: name, Raw: m}
	var err error
	if q.Method, err = optString(m, "quant_method"); err != nil {
		return nil, fmt.Errorf("%s: quantization config: %w", name, err)
	}
	q.Method = strings.ToLower(q.Method)
	// AutoGPTQ's quantize_config.json has no quant_method; "checkpoint_format" or "is_marlin_format" hint it.
	if q.Method == "" {
		if _, ok := m["desc_act"]; ok {
			q.Method = "gptq"
		} else if _, ok := m["zero_point"]; ok {
			q.Method = "awq"
		}
	}
	b, err := firstInt(m, "bits", "w_bit")
	if err != nil {
		return nil, fmt.Errorf("%s: quantization config: %w", name, err)
	}
	q.Bits = int(b)
	g, err := firstInt(m, "group_size", "q_group_size")
	if err != nil {
		return nil, fmt.Errorf("%s: quantization config: %w", name, err)
	}
	q.GroupSize = int(g)
	return q, nil
}

// firstInt returns the first of keys present as an integer, or 0.
func firstInt(m map[string]any, keys ...string) (int64, error) {
	for _, k := range keys {
		v, ok, err := Int(m, k)
		if err != nil || ok {
			return v, err
		}
	}
	return 0, nil
}

// DerivedMaxLen is the context length vLLM derives from the config, with a note of how.
type DerivedMaxLen struct {
	Len int64
	Key string // the length key that set the minimum, or "" for the 2048 default
	// Default is true when no length key is present and Len is the config class's default.
	Default bool
	Rope    string  // rope type applied, or ""
	Factor  float64 // rope factor applied (1 when none)
}

// MaxModelLen derives the context length the way vLLM does: the minimum over the length keys
// present (none: the config class's max_position_embeddings default, else 2048), then for RoPE
// scaling types other than llama3/longrope/su the factor is applied (for yarn, to
// original_max_position_embeddings) — except for Gemma 3, whose factor vLLM does not apply.
func (c *ModelConfig) MaxModelLen() (DerivedMaxLen, error) {
	d := DerivedMaxLen{Len: math.MaxInt64, Factor: 1}
	for _, k := range LengthKeys {
		v, ok, err := Int(c.Text, k)
		if err != nil {
			return d, err
		}
		if ok && v <= 0 {
			return d, fmt.Errorf("field %s: %d is not a positive length", k, v)
		}
		if ok && v < d.Len {
			d.Len, d.Key = v, k
		}
	}
	if d.Key == "" {
		d.Len = 2048
		if v, ok := c.classDefault("max_position_embeddings"); ok {
			d.Len, d.Key, d.Default = v, "max_position_embeddings", true
		}
	}
	rs, err := c.RopeScaling()
	if err != nil || rs == nil {
		return d, err
	}
	if c.ignoresRopeFactor() {
		return d, nil
	}
	rt, _ := rs["rope_type"].(string)
	if rt == "" {
		rt, _ = rs["type"].(string)
	}
	switch rt {
	case "llama3", "longrope", "su":
		d.Rope = rt
		return d, nil
	}
	f, ok, err := Float(rs, "factor")
	if err != nil {
		return d, fmt.Errorf("rope_scaling: %w", err)
	}
	if !ok {
		d.Rope = rt
		return d, nil
	}
	if !(f > 0) || math.IsInf(f, 0) {
		return d, fmt.Errorf("rope_scaling: field factor: %v is not a positive number", f)
	}
	if rt == "yarn" {
		o, ok, err := Int(rs, "original_max_position_embeddings")
		if err != nil {
			return d, fmt.Errorf("rope_scaling: %w", err)
		}
		if ok && o <= 0 {
			return d, fmt.Errorf("rope_scaling: field original_max_position_embeddings: %d is not a positive length", o)
		}
		if ok {
			d.Len = o
		}
	}
	// Converting an out-of-range float to int64 is implementation-defined in Go; bound it first.
	scaled := float64(d.Len) * f
	if scaled >= 1<<62 {
		return d, fmt.Errorf("rope_scaling: field factor: %v × %d overflows the context length", f, d.Len)
	}
	d.Rope, d.Factor = rt, f
	d.Len = max(int64(scaled), 1)
	return d, nil
}

// RopeScaling returns rope_scaling (transformers v4) or rope_parameters (v5), or nil.
func (c *ModelConfig) RopeScaling() (map[string]any, error) {
	for _, k := range []string{"rope_scaling", "rope_parameters"} {
		v, ok := c.Text[k]
		if !ok || v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("field %s: want an object, got %s", k, typeName(v))
		}
		return m, nil
	}
	return nil, nil
}

// Int reads an integer field; ok is false when absent or null.
func Int(m map[string]any, key string) (v int64, ok bool, err error) {
	x, present := m[key]
	if !present || x == nil {
		return 0, false, nil
	}
	n, isNum := x.(json.Number)
	if !isNum {
		return 0, false, fmt.Errorf("field %s: want an integer, got %s", key, typeName(x))
	}
	i, err := n.Int64()
	if err != nil {
		f, ferr := n.Float64()
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
			return 0, false, fmt.Errorf("field %s: want an integer, got %s", key, n)
		}
		i = int64(f)
	}
	return i, true, nil
}

// Float reads a numeric field; ok is false when absent or null.
func Float(m map[string]any, key string) (v float64, ok bool, err error) {
	x, present := m[key]
	if !present || x == nil {
		return 0, false, nil
	}
	n, isNum := x.(json.Number)
	if !isNum {
		return 0, false, fmt.Errorf("field %s: want a number, got %s", key, typeName(x))
	}
	f, err := n.Float64()
	if err != nil {
		return 0, false, fmt.Errorf("field %s: %v", key, err)
	}
	return f, true, nil
}

func optString(m map[string]any, key string) (string, error) {
	x, ok := m[key]
	if !ok || x == nil {
		return "", nil
	}
	s, ok := x.(string)
	if !ok {
		return "", fmt.Errorf("field %s: want a string, got %s", key, typeName(x))
	}
	return s, nil
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
