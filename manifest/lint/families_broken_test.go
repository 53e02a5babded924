//go:build integration

package lint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"lifeboat/internal/enginesim"
	"lifeboat/internal/sample"
	"lifeboat/manifest"
)

type stTensor = sample.TensorSpec

// editTensors rewrites dir/model.safetensors with the tensor list fn makes of the current one.
func editTensors(t *testing.T, dir string, fn func([]stTensor) []stTensor) {
	t.Helper()
	if err := sample.EditSafetensors(filepath.Join(dir, "model.safetensors"), fn); err != nil {
		t.Fatal(err)
	}
}

// addedToken adds a token to tokenizer.json's added_tokens after the highest id there (and at
// or past the model's vocab_size): special tokens there are what vLLM accepts at the edge of
// the vocabulary; a regular one is text the model cannot embed.
func addedToken(t *testing.T, dir string, vocab int64, special bool) {
	t.Helper()
	p := filepath.Join(dir, "tokenizer.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var tj struct {
		Added []struct {
			ID int64 `json:"id"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(data, &tj); err != nil {
		t.Fatal(err)
	}
	id := vocab
	for _, a := range tj.Added {
		id = max(id, a.ID+1)
	}
	loc := regexp.MustCompile(`"added_tokens"\s*:\s*\[`).FindIndex(data)
	if loc == nil {
		t.Fatal("tokenizer.json has no added_tokens")
	}
	tok := fmt.Sprintf(`{"id": %d, "content": "<lifeboat_edge_%d>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": %t},`, id, id, special)
	var b bytes.Buffer
	b.Write(data[:loc[1]])
	b.WriteString(tok)
	b.Write(data[loc[1]:])
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// linkTree copies dir's files to a new directory as hard links (edits replace files).
func linkTree(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := sample.LinkTree(dir, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func famVocab(fam string) int64 {
	return map[string]int64{"llama2": 32000, "llama3_1": 128256, "qwen3": 151936, "gemma3": 262144, "deepseek_v3": 129280, "gptoss": 201088}[fam]
}

func setKey(k string, v any) func(map[string]any) { return func(d map[string]any) { d[k] = v } }

// brokenClass is one failure class of issue 12, applied to every family fixture it fits.
type brokenClass struct {
	class string
	na    map[string]string // family → why the class does not apply to it
	valid map[string]string // family → why the edit is not a breakage there: lint and engine-sim accept it
	edit  func(t *testing.T, fam, dir string) (engineFile string)
	rule  string
	sev   Severity
	lint  string // in the finding's message
	load  string // in engine-sim's start-up error; "" when vLLM starts (the class is lint's alone)
}

var (
	notFP8       = map[string]string{"llama2": "BF16 checkpoint: no FP8 weights", "llama3_1": "BF16 checkpoint: no FP8 weights", "qwen3": "BF16 checkpoint: no FP8 weights", "gemma3": "BF16 checkpoint: no FP8 weights", "gptoss": "MXFP4 experts, BF16 elsewhere: no FP8 weights"}
	notMXFP4     = map[string]string{"llama2": "BF16 checkpoint: no MXFP4 blocks", "llama3_1": "BF16 checkpoint: no MXFP4 blocks", "qwen3": "BF16 checkpoint: no MXFP4 blocks", "gemma3": "BF16 checkpoint: no MXFP4 blocks", "deepseek_v3": "block FP8 checkpoint: no MXFP4 blocks"}
	quantAlready = map[string]string{"deepseek_v3": "already block-FP8: its classes are the FP8 scale and dropped-config rows", "gptoss": "already MXFP4: its classes are the MXFP4 scale and dropped-config rows"}
	bf16Only     = map[string]string{"llama2": "unquantized: no quantization_config to drop", "llama3_1": "unquantized: no quantization_config to drop", "qwen3": "unquantized: no quantization_config to drop", "gemma3": "unquantized: no quantization_config to drop"}
	notGptOss    = map[string]string{"llama2": "not gpt-oss: chats use the chat template, no harmony encoding", "llama3_1": "not gpt-oss", "qwen3": "not gpt-oss", "gemma3": "not gpt-oss", "deepseek_v3": "not gpt-oss"}
	textOnly     = map[string]string{"llama2": "text-only architecture (no vision_config)", "llama3_1": "text-only architecture", "qwen3": "text-only architecture", "deepseek_v3": "text-only architecture", "gptoss": "text-only architecture"}
	noRope       = map[string]string{"llama2": "its config never has rope_scaling", "qwen3": "its shipped config has none (the YaRN-extended variant is in TestFamilyRopeScalingDropped)", "gemma3": "the 1B-style fixture has none (the 4B-style variant is in TestFamilyRopeScalingDropped)"}
)

func configEdit(fns ...func(map[string]any)) func(t *testing.T, fam, dir string) string {
	return func(t *testing.T, fam, dir string) string {
		for _, fn := range fns {
			editJSON(t, dir, "config.json", fn)
		}
		return ""
	}
}

func brokenClasses() []brokenClass {
	awq := map[string]any{"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true, "version": "gemm"}
	gptq := map[string]any{"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": false, "sym": true}
	return []brokenClass{
		{class: "embedding rows vs vocab_size", rule: "embedding-vocab-size", sev: Error, lint: "vocab_size is", load: "Attempted to load weight",
			edit: func(t *testing.T, fam, dir string) string {
				return configEdit(setKey("vocab_size", famVocab(fam)+64))(t, fam, dir)
			}},
		{class: "more layers in config than checkpoint", rule: "weights-config-shape", sev: Error, lint: "no tensors for layer(s) 2", load: "{model.layers.2.*}",
			edit: configEdit(setKey("num_hidden_layers", 3))},
		{class: "fewer layers in config than checkpoint", rule: "weights-config-shape", sev: Error, lint: "layer(s) from 1 up", load: "KeyError: 'model.layers.1.",
			valid: map[string]string{"deepseek_v3": "layer 1 is then DeepSeek's MTP layer (num_nextn_predict_layers 1), which vLLM skips"},
			edit:  configEdit(setKey("num_hidden_layers", 1))},
		{class: "hidden_size not the embedding width", rule: "weights-config-shape", sev: Error, lint: "hidden_size is 128", load: "hidden_size 128",
			edit: configEdit(setKey("hidden_size", 128))},
		{class: "FP8 block scales missing (weight_scale instead of weight_scale_inv)", na: notFP8, rule: "quant-tensors", sev: Error, lint: "without their weight_scale_inv", load: "weight_scale_inv",
			edit: func(t *testing.T, fam, dir string) string {
				editTensors(t, dir, func(ts []stTensor) []stTensor {
					for i := range ts {
						if ts[i].Name == "model.layers.0.mlp.up_proj.weight_scale_inv" {
							ts[i] = stTensor{Name: "model.layers.0.mlp.up_proj.weight_scale", DType: "F32", Shape: []int64{1}}
						}
					}
					return ts
				})
				return ""
			}},
		{class: "FP8 block scales of the wrong shape", na: notFP8, rule: "quant-tensors", sev: Error, lint: "one scale per weight_block_size", load: "torch.Size([2 1])",
			edit: func(t *testing.T, fam, dir string) string {
				editTensors(t, dir, func(ts []stTensor) []stTensor {
					for i := range ts {
						if ts[i].Name == "model.layers.1.self_attn.o_proj.weight_scale_inv" {
							ts[i].Shape = []int64{2, 1}
						}
					}
					return ts
				})
				return ""
			}},
		{class: "MXFP4 scales missing", na: notMXFP4, rule: "quant-tensors", sev: Error, lint: "without their *_scales", load: "gate_up_proj_scales",
			edit: func(t *testing.T, fam, dir string) string {
				editTensors(t, dir, func(ts []stTensor) []stTensor {
					var out []stTensor
					for _, x := range ts {
						if !strings.HasSuffix(x.Name, "gate_up_proj_scales") {
							out = append(out, x)
						}
					}
					return out
				})
				return ""
			}},
		{class: "quantization_config dropped", na: bf16Only, rule: "quant-tensors", sev: Error, lint: "", load: "was the quantization config dropped",
			edit: configEdit(func(d map[string]any) { delete(d, "quantization_config") })},
		{class: "AWQ declared over unquantized weights", na: quantAlready, rule: "quant-tensors", sev: Error, lint: "a mis-exported checkpoint", load: "mis-exported checkpoint",
			edit: configEdit(setKey("quantization_config", awq))},
		{class: "GPTQ declared over unquantized weights", na: quantAlready, rule: "quant-tensors", sev: Error, lint: "a mis-exported checkpoint", load: "mis-exported checkpoint",
			edit: configEdit(setKey("quantization_config", gptq))},
		{class: "transformers default: vocab_size absent", rule: "embedding-vocab-size", sev: Error, lint: "vocab_size is", load: "Attempted to load weight",
			valid: map[string]string{"llama2": "LlamaConfig's default vocab_size 32000 is Llama 2's", "qwen3": "Qwen3Config's default 151936 is the published one",
				"deepseek_v3": "DeepseekV3Config's default 129280 is the published one", "gptoss": "GptOssConfig's default 201088 is the published one"},
			edit: configEdit(func(d map[string]any) { delete(d, "vocab_size") })},
		{class: "transformers default: max_position_embeddings absent, served at the published length", rule: "context-length", sev: Error, lint: "max-model-len", load: "User-specified max_model_len",
			valid: map[string]string{"gemma3": "Gemma3TextConfig's default 131072 covers the 32768 served (vLLM ignores Gemma 3's rope factor)",
				"deepseek_v3": "yarn derives original 4096 × factor 40 = 163840 without it", "gptoss": "yarn derives original 4096 × factor 32 = 131072 without it"},
			edit: func(t *testing.T, fam, dir string) string {
				var length any
				editJSON(t, dir, "config.json", func(d map[string]any) { length = d["max_position_embeddings"]; delete(d, "max_position_embeddings") })
				ef := filepath.Join(t.TempDir(), "engine.yaml")
				if err := os.WriteFile(ef, []byte(fmt.Sprintf("model: %s\nmax-model-len: %v\n", dir, length)), 0o644); err != nil {
					t.Fatal(err)
				}
				return ef
			}},
		{class: "special token at the edge of the vocabulary", rule: "tokenizer-vocab-size", sev: Error,
			valid: map[string]string{"llama2": "vLLM accepts special tokens past vocab_size that chats never use", "llama3_1": "as llama2", "qwen3": "as llama2", "gemma3": "as llama2 (the shared Gemma 3 tokenizer has one at id 262144)", "deepseek_v3": "as llama2", "gptoss": "as llama2"},
			edit:  func(t *testing.T, fam, dir string) string { addedToken(t, dir, famVocab(fam), true); return "" }},
		{class: "regular added token the model cannot embed", rule: "tokenizer-vocab-size", sev: Error, lint: "have no embedding row", load: "",
			edit: func(t *testing.T, fam, dir string) string { addedToken(t, dir, famVocab(fam), false); return "" }},
		{class: "remote code: auto_map module not in the repository", rule: "remote-code-missing", sev: Error, lint: "model/configuration_lifeboat.py is not in the manifest", load: "does not appear to have a file named configuration_lifeboat.py",
			edit: func(t *testing.T, fam, dir string) string {
				editJSON(t, dir, "config.json", setKey("auto_map", map[string]any{"AutoConfig": "configuration_lifeboat.LifeboatConfig", "AutoModelForCausalLM": "modeling_lifeboat.LifeboatForCausalLM"}))
				ef := filepath.Join(t.TempDir(), "engine.yaml")
				if err := os.WriteFile(ef, []byte("model: "+dir+"\ntrust-remote-code: true\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return ef
			}},
		{class: "multimodal architecture without its processor config", na: textOnly, rule: "processor-config-missing", sev: Error, lint: "declares a vision_config", load: "Can't load image processor",
			edit: configEdit(func(d map[string]any) {
				text := map[string]any{}
				for k, v := range d {
					if k != "architectures" {
						text[k] = v
					}
				}
				for k := range d {
					delete(d, k)
				}
				d["architectures"], d["model_type"] = []string{"Gemma3ForConditionalGeneration"}, "gemma3"
				d["text_config"] = text
				d["vision_config"] = map[string]any{"model_type": "siglip_vision_model", "hidden_size": 64, "image_size": 896, "patch_size": 14, "num_hidden_layers": 2}
				d["mm_tokens_per_image"], d["boi_token_index"], d["eoi_token_index"], d["image_token_index"] = 256, 255999, 256000, 262144
			})},
		{class: "gpt-oss without the o200k_base harmony encoding", na: notGptOss, rule: "harmony-encoding-missing", sev: Warning, lint: "o200k_base", load: "",
			edit: func(t *testing.T, fam, dir string) string { return "" }},
		{class: "rope_scaling without rope_type", na: noRope, rule: "rope-scaling-dropped", sev: Error, lint: "rope_scaling should have a 'rope_type' key", load: "rope_scaling should have a 'rope_type' key",
			edit: configEdit(func(d map[string]any) {
				rs := d["rope_scaling"].(map[string]any)
				delete(rs, "rope_type")
				delete(rs, "type")
			})},
		{class: "rope_scaling dropped", na: noRope, rule: "rope-scaling-dropped", sev: Warning, lint: "has no rope_scaling", load: "",
			edit: configEdit(func(d map[string]any) { delete(d, "rope_scaling") })},
	}
}

// TestFamilyBrokenVariants: each family fixture, broken in each class of issue 12 that applies
// to it, is reported by lint under the class's rule (an error where vLLM fails) and refused by
// engine-sim with vLLM's kind of message where vLLM fails to start; where the edit is not a
// breakage for a family, both accept it.
func TestFamilyBrokenVariants(t *testing.T) {
	classes := brokenClasses()
	for _, fam := range sample.Families {
		t.Run(fam, func(t *testing.T) {
			t.Parallel() // each case parses a real-size tokenizer twice: use every core
			base := familyDir(t, fam)
			for _, bc := range classes {
				t.Run(bc.class, func(t *testing.T) {
					if why, ok := bc.na[fam]; ok {
						t.Skipf("does not apply: %s", why)
					}
					dir := linkTree(t, base)
					ef := bc.edit(t, fam, dir)
					fs := ruleFindings(lintWith(t, dir, ef), bc.rule)
					_, loadErr := enginesim.Load(context.Background(), dir, ef, enginesim.Options{})
					if why, ok := bc.valid[fam]; ok {
						for _, f := range fs {
							if f.Severity == Error {
								t.Errorf("not a breakage (%s), but lint says: %s", why, f.Message)
							}
						}
						if loadErr != nil {
							t.Errorf("not a breakage (%s), but engine-sim refuses: %v", why, loadErr)
						}
						return
					}
					found := false
					for _, f := range fs {
						found = found || f.Severity == bc.sev && strings.Contains(f.Message, bc.lint)
					}
					if !found {
						t.Errorf("lint has no %s %s finding containing %q:%s", bc.sev, bc.rule, bc.lint, mtDump(fs))
					}
					var le *enginesim.LoadError
					switch {
					case bc.load == "" && loadErr != nil:
						t.Errorf("vLLM starts on this, engine-sim refuses: %v", loadErr)
					case bc.load != "" && (!errors.As(loadErr, &le) || !strings.Contains(le.Msg, bc.load)):
						t.Errorf("engine-sim: err = %v, want a start-up error containing %q", loadErr, bc.load)
					}
				})
			}
		})
	}
}

// lintWith builds a manifest of the model directory (and engine config, if any) and lints it.
func lintWith(t *testing.T, dir, engineFile string) *Report {
	t.Helper()
	if engineFile == "" {
		return lintDir(t, dir)
	}
	ctx := context.Background()
	m, err := manifest.Build(ctx, manifest.BuildOptions{ModelDir: dir, EngineFile: engineFile})
	if err != nil {
		t.Fatalf("build manifest: %v", err)
	}
	return Run(ctx, m, DirSource{Model: dir}, nil)
}

// An encoder-decoder checkpoint (Whisper large-v3-turbo: 32 encoder layers, 4 decoder layers,
// num_hidden_layers 32) is not judged by num_hidden_layers.
func TestWeightsConfigShapeEncoderDecoder(t *testing.T) {
	dir := t.TempDir()
	var ts []sample.TensorSpec
	for i := 0; i < 4; i++ {
		ts = append(ts, sample.TensorSpec{Name: fmt.Sprintf("model.decoder.layers.%d.fc1.weight", i), DType: "F16", Shape: []int64{8, 4}})
	}
	ts = append(ts, sample.TensorSpec{Name: "model.encoder.layers.0.fc1.weight", DType: "F16", Shape: []int64{8, 4}})
	if err := sample.WriteZeroSafetensors(filepath.Join(dir, "model.safetensors"), ts); err != nil {
		t.Fatal(err)
	}
	cfg := `{"architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper", "num_hidden_layers": 32, "encoder_layers": 32, "decoder_layers": 4, "d_model": 4, "vocab_size": 51866}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if fs := ruleFindings(lintDir(t, dir), "weights-config-shape"); len(fs) > 0 {
		t.Errorf("false positive:%s", mtDump(fs))
	}
}
