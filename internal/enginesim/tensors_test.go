package enginesim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/sample"
)

// stt is a tensor of a crafted shard.
type stt struct {
	name, dtype string
	shape       []int64
}

// writeShard writes a safetensors file holding the tensors (zero bytes).
func writeShard(t *testing.T, path string, ts []stt) {
	t.Helper()
	specs := make([]sample.TensorSpec, len(ts))
	for i, x := range ts {
		specs[i] = sample.TensorSpec{Name: x.name, DType: x.dtype, Shape: x.shape}
	}
	if err := sample.WriteZeroSafetensors(path, specs); err != nil {
		t.Fatal(err)
	}
}

func editConfig(t *testing.T, l *sample.Layout, fn func(map[string]any)) {
	t.Helper()
	if err := sample.EditJSON(filepath.Join(l.ModelDir, "config.json"), fn); err != nil {
		t.Fatal(err)
	}
}

// craftedRepo replaces the sample's weights with one shard of the given tensors (the sample's
// config: vocab 512, hidden 64, 2 layers) and applies quant as config.json's quantization_config.
func craftedRepo(t *testing.T, quant map[string]any, layer func(p string) []stt) *sample.Layout {
	t.Helper()
	l := genRepo(t, sample.Options{NoLoRA: true, Shards: 1})
	for _, s := range l.Shards {
		os.Remove(filepath.Join(l.ModelDir, s))
	}
	os.Remove(filepath.Join(l.ModelDir, "model.safetensors.index.json"))
	ts := []stt{{"model.embed_tokens.weight", "BF16", []int64{512, 64}}, {"lm_head.weight", "BF16", []int64{512, 64}}, {"model.norm.weight", "BF16", []int64{64}}}
	for i := 0; i < 2; i++ {
		ts = append(ts, layer(fmt.Sprintf("model.layers.%d.", i))...)
	}
	writeShard(t, filepath.Join(l.ModelDir, "model.safetensors"), ts)
	editConfig(t, l, func(c map[string]any) {
		if quant == nil {
			delete(c, "quantization_config")
		} else {
			c["quantization_config"] = quant
		}
	})
	return l
}

func fp8Layer(scale func(p string) []stt) func(string) []stt {
	return func(p string) []stt {
		return append([]stt{{p + "self_attn.q_proj.weight", "F8_E4M3", []int64{256, 64}}, {p + "input_layernorm.weight", "BF16", []int64{64}}}, scale(p)...)
	}
}

func mxfp4Layer(scales bool) func(string) []stt {
	return func(p string) []stt {
		ts := []stt{{p + "mlp.experts.gate_up_proj_blocks", "U8", []int64{4, 128, 2, 16}}, {p + "input_layernorm.weight", "BF16", []int64{64}}}
		if scales {
			ts = append(ts, stt{p + "mlp.experts.gate_up_proj_scales", "U8", []int64{4, 128, 2}})
		}
		return ts
	}
}

var (
	fp8Block = map[string]any{"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3", "weight_block_size": []int{128, 128}}
	mxfp4    = map[string]any{"quant_method": "mxfp4", "modules_to_not_convert": []string{"model.layers.*.self_attn", "lm_head"}}
)

// Checkpoints whose tensors agree with config.json and the quantization method load.
func TestLoadTensorSetsAgree(t *testing.T) {
	for name, l := range map[string]*sample.Layout{
		"fp8 block":    craftedRepo(t, fp8Block, fp8Layer(func(p string) []stt { return []stt{{p + "self_attn.q_proj.weight_scale_inv", "F32", []int64{2, 1}}} })),
		"mxfp4":        craftedRepo(t, mxfp4, mxfp4Layer(true)),
		"awq (sample)": genRepo(t, sample.Options{Quant: "awq", NoLoRA: true}),
	} {
		if _, err := Load(context.Background(), l.ModelDir, "", Options{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Where vLLM's weight loading fails, engine-sim refuses with vLLM's kind of message.
func TestLoadTensorChecks(t *testing.T) {
	for _, c := range []struct {
		name string
		repo func(t *testing.T) *sample.Layout
		want string
	}{
		{"vocab_size above the embedding rows", func(t *testing.T) *sample.Layout {
			l := genRepo(t, sample.Options{NoLoRA: true})
			editConfig(t, l, func(c map[string]any) { c["vocab_size"] = 600 })
			return l
		}, "Attempted to load weight (torch.Size([512, 64])) into parameter (torch.Size([600, 64]))"},
		{"hidden_size not the embedding width", func(t *testing.T) *sample.Layout {
			l := genRepo(t, sample.Options{NoLoRA: true})
			editConfig(t, l, func(c map[string]any) { c["hidden_size"] = 128 })
			return l
		}, "hidden_size 128"},
		{"more layers in config than checkpoint", func(t *testing.T) *sample.Layout {
			l := genRepo(t, sample.Options{NoLoRA: true})
			editConfig(t, l, func(c map[string]any) { c["num_hidden_layers"] = 3 })
			return l
		}, "not initialized from checkpoint: {model.layers.2.*}"},
		{"fewer layers in config than checkpoint", func(t *testing.T) *sample.Layout {
			l := genRepo(t, sample.Options{NoLoRA: true})
			editConfig(t, l, func(c map[string]any) { c["num_hidden_layers"] = 1 })
			return l
		}, "KeyError: 'model.layers.1."},
		{"AWQ with quantization_config dropped", func(t *testing.T) *sample.Layout {
			l := genRepo(t, sample.Options{Quant: "awq", NoLoRA: true})
			editConfig(t, l, func(c map[string]any) { delete(c, "quantization_config") })
			return l
		}, "was the quantization config dropped"},
		{"AWQ layer without scales", func(t *testing.T) *sample.Layout {
			return craftedRepo(t, map[string]any{"quant_method": "awq", "bits": 4, "group_size": 32, "zero_point": true, "version": "gemm"}, func(p string) []stt {
				return []stt{{p + "self_attn.q_proj.qweight", "I32", []int64{64, 8}}, {p + "self_attn.q_proj.qzeros", "I32", []int64{2, 8}}}
			})
		}, "self_attn.q_proj.scales"},
		{"AWQ config over bare weights", func(t *testing.T) *sample.Layout {
			return craftedRepo(t, map[string]any{"quant_method": "awq", "bits": 4, "group_size": 32}, func(p string) []stt {
				return []stt{{p + "self_attn.q_proj.weight", "BF16", []int64{64, 64}}}
			})
		}, "mis-exported checkpoint"},
		{"FP8 block scales missing", func(t *testing.T) *sample.Layout {
			return craftedRepo(t, fp8Block, fp8Layer(func(p string) []stt { return []stt{{p + "self_attn.q_proj.weight_scale", "F32", []int64{1}}} }))
		}, "weight_scale_inv"},
		{"FP8 block scales of the wrong shape", func(t *testing.T) *sample.Layout {
			return craftedRepo(t, fp8Block, fp8Layer(func(p string) []stt { return []stt{{p + "self_attn.q_proj.weight_scale_inv", "F32", []int64{1, 1}}} }))
		}, "torch.Size([2 1])"},
		{"FP8 weights with quantization_config dropped", func(t *testing.T) *sample.Layout {
			return craftedRepo(t, nil, fp8Layer(func(p string) []stt { return []stt{{p + "self_attn.q_proj.weight_scale_inv", "F32", []int64{2, 1}}} }))
		}, "FP8 tensor"},
		{"MXFP4 scales missing", func(t *testing.T) *sample.Layout { return craftedRepo(t, mxfp4, mxfp4Layer(false)) }, "gate_up_proj_scales"},
		{"MXFP4 quantization_config dropped", func(t *testing.T) *sample.Layout { return craftedRepo(t, nil, mxfp4Layer(true)) }, "MXFP4 tensor"},
		{"MXFP4 declared over plain weights", func(t *testing.T) *sample.Layout {
			return craftedRepo(t, mxfp4, func(p string) []stt { return []stt{{p + "mlp.experts.gate_up_proj", "BF16", []int64{4, 64, 256}}} })
		}, "no U8 *_blocks"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := c.repo(t)
			_, err := Load(context.Background(), l.ModelDir, "", Options{})
			var le *LoadError
			if !errors.As(err, &le) || le.Kind != "weights" || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a weights error containing %q", err, c.want)
			}
		})
	}
}
