package lint

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/sample"
	"lifeboat/manifest"
)

// mtModelRuleIDs are the ids of the rules in rules_model.go.
func mtModelRuleIDs() map[string]bool {
	ids := map[string]bool{}
	for _, r := range modelRules {
		ids[r.ID] = true
	}
	return ids
}

// mtGenSample writes a sample repository into a fresh temporary directory.
func mtGenSample(t *testing.T, quant string) *sample.Layout {
	t.Helper()
	l, err := sample.Generate(context.Background(), filepath.Join(t.TempDir(), "s"), sample.Options{Quant: quant})
	if err != nil {
		t.Fatalf("generate sample: %v", err)
	}
	return l
}

// mtLintSample builds a manifest of the (possibly broken) sample and lints it against its files.
func mtLintSample(t *testing.T, l *sample.Layout) *Report {
	t.Helper()
	ctx := context.Background()
	m, err := manifest.Build(ctx, manifest.BuildOptions{ModelDir: l.ModelDir, EngineFile: l.EngineFile, DeployPaths: []string{l.DeployDir}})
	if err != nil {
		t.Fatalf("build manifest: %v", err)
	}
	return Run(ctx, m, DirSource{Model: l.ModelDir}, nil)
}

// mtModelFindings keeps the findings of the model rules.
func mtModelFindings(rep *Report) []Finding {
	ids := mtModelRuleIDs()
	var out []Finding
	for _, f := range rep.Findings {
		if ids[f.Rule] {
			out = append(out, f)
		}
	}
	return out
}

func mtDump(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "\n  %s %s %s: %s", f.Severity, f.Rule, f.Path, f.Message)
	}
	return b.String()
}

func TestModelRulesCleanSample(t *testing.T) {
	for _, quant := range []string{"", "awq"} {
		t.Run("quant="+quant, func(t *testing.T) {
			rep := mtLintSample(t, mtGenSample(t, quant))
			if fs := mtModelFindings(rep); len(fs) > 0 {
				t.Fatalf("clean sample has model findings:%s", mtDump(fs))
			}
		})
	}
}

// Helpers that break a sample repository.

func mtWrite(t *testing.T, l *sample.Layout, rel string, data []byte) {
	t.Helper()
	if err := os.WriteFile(l.Path(rel), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mtRemove(t *testing.T, l *sample.Layout, rel string) {
	t.Helper()
	if err := os.Remove(l.Path(rel)); err != nil {
		t.Fatal(err)
	}
}

func mtMutate(t *testing.T, l *sample.Layout, rel string, fn func(doc map[string]any)) {
	t.Helper()
	if err := l.MutateJSON(rel, func(doc map[string]any) error { fn(doc); return nil }); err != nil {
		t.Fatal(err)
	}
}

func mtTruncate(t *testing.T, l *sample.Layout, rel string, drop int64) {
	t.Helper()
	st, err := os.Stat(l.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(l.Path(rel), st.Size()-drop); err != nil {
		t.Fatal(err)
	}
}

// mtRewriteHeader edits the JSON header of a safetensors file, keeping its data buffer.
func mtRewriteHeader(t *testing.T, l *sample.Layout, rel string, fn func(h map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(l.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(data[:8])
	dec := json.NewDecoder(bytes.NewReader(data[8 : 8+n]))
	dec.UseNumber()
	var h map[string]any
	if err := dec.Decode(&h); err != nil {
		t.Fatal(err)
	}
	fn(h)
	hdr, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	binary.Write(&out, binary.LittleEndian, uint64(len(hdr)))
	out.Write(hdr)
	out.Write(data[8+n:])
	mtWrite(t, l, rel, out.Bytes())
}

// mtShardWith returns the shard (relative to the root) whose header has the tensor.
func mtShardWith(t *testing.T, l *sample.Layout, tensor string) string {
	t.Helper()
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	data, err := os.ReadFile(l.Path("model/model.safetensors.index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		t.Fatal(err)
	}
	s, ok := idx.WeightMap[tensor]
	if !ok {
		t.Fatalf("no tensor %s in the sample", tensor)
	}
	return "model/" + s
}

const mtLFSPointer = "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"

func TestModelRules(t *testing.T) {
	const q = "model.layers.0.self_attn.q_proj"
	cases := []struct {
		name     string
		quant    string
		breakIt  func(t *testing.T, l *sample.Layout)
		rule     string
		severity Severity
		path     func(l *sample.Layout) string // nil: fixed path below
		fixed    string
		contains string
	}{
		{name: "config.json removed", breakIt: func(t *testing.T, l *sample.Layout) { mtRemove(t, l, "model/config.json") },
			rule: "config-missing", severity: Error, fixed: "model/config.json", contains: "not in the manifest"},
		{name: "config.json not JSON", breakIt: func(t *testing.T, l *sample.Layout) {
			mtWrite(t, l, "model/config.json", []byte(`{"architectures": [`))
		},
			rule: "config-invalid", severity: Error, fixed: "model/config.json", contains: "model/config.json: not a JSON object"},
		{name: "config.json vocab_size a string", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/config.json", func(d map[string]any) { d["vocab_size"] = "512" })
		}, rule: "config-invalid", severity: Error, fixed: "model/config.json", contains: "field vocab_size"},
		{name: "architectures empty", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/config.json", func(d map[string]any) { d["architectures"] = []any{} })
		}, rule: "config-architecture", severity: Error, fixed: "model/config.json", contains: "field architectures"},
		{name: "model_type missing", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/config.json", func(d map[string]any) { delete(d, "model_type") })
		}, rule: "config-architecture", severity: Error, fixed: "model/config.json", contains: "field model_type"},
		{name: "tokenizer.json removed", breakIt: func(t *testing.T, l *sample.Layout) { mtRemove(t, l, "model/tokenizer.json") },
			rule: "tokenizer-missing", severity: Error, fixed: "model/", contains: "no usable tokenizer"},
		{name: "tokenizer.json unknown model type", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/tokenizer.json", func(d map[string]any) { d["model"].(map[string]any)["type"] = "Bigram" })
		}, rule: "tokenizer-invalid", severity: Error, fixed: "model/tokenizer.json", contains: "field model.type"},
		{name: "tokenizer.json merge out of vocabulary", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/tokenizer.json", func(d map[string]any) {
				m := d["model"].(map[string]any)
				m["merges"] = append(m["merges"].([]any), []any{"zzq", "yyq"})
			})
		}, rule: "tokenizer-invalid", severity: Error, fixed: "model/tokenizer.json", contains: `token "zzq" is not in the vocabulary`},
		{name: "tokenizer_config.json not JSON", breakIt: func(t *testing.T, l *sample.Layout) {
			mtWrite(t, l, "model/tokenizer_config.json", []byte("{'bos_token': 1}"))
		}, rule: "tokenizer-invalid", severity: Error, fixed: "model/tokenizer_config.json", contains: "model/tokenizer_config.json: not a JSON object"},
		{name: "added token beyond vocab_size", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/tokenizer.json", func(d map[string]any) {
				d["added_tokens"] = append(d["added_tokens"].([]any), map[string]any{"id": 600, "content": "<|extra|>", "special": false})
			})
		}, rule: "tokenizer-vocab-size", severity: Error, fixed: "model/tokenizer.json", contains: "vocab_size is 512"},
		{name: "multimodal without a processor config", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/config.json", func(d map[string]any) {
				d["vision_config"] = map[string]any{"hidden_size": 32, "model_type": "siglip_vision_model"}
			})
		}, rule: "processor-config-missing", severity: Error, fixed: "model/preprocessor_config.json", contains: "vision_config"},
		{name: "remote code module missing", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/config.json", func(d map[string]any) {
				d["auto_map"] = map[string]any{"AutoConfig": "configuration_lifeboat.LifeboatConfig", "AutoModelForCausalLM": "modeling_lifeboat.LifeboatForCausalLM"}
			})
			mtWrite(t, l, "model/configuration_lifeboat.py", []byte("# config\n"))
			data, err := os.ReadFile(l.EngineFile)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(l.EngineFile, append(data, []byte("trust-remote-code: true\n")...), 0o644); err != nil {
				t.Fatal(err)
			}
		}, rule: "remote-code-missing", severity: Error, fixed: "model/config.json", contains: "model/modeling_lifeboat.py is not in the manifest"},
		{name: "special token the chat template uses beyond vocab_size", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/tokenizer.json", func(d map[string]any) {
				d["added_tokens"] = append(d["added_tokens"].([]any), map[string]any{"id": 512, "content": "<|turn|>", "special": true})
			})
			mtWrite(t, l, "model/chat_template.jinja", []byte("{% for m in messages %}<|turn|>{{ m.content }}{% endfor %}"))
		}, rule: "tokenizer-vocab-size", severity: Error, fixed: "model/tokenizer.json", contains: "largest id 512"},
		{name: "generation_config.json is an LFS pointer", breakIt: func(t *testing.T, l *sample.Layout) {
			mtWrite(t, l, "model/generation_config.json", []byte(mtLFSPointer))
		}, rule: "lfs-pointer", severity: Error, fixed: "model/generation_config.json", contains: "Git LFS pointer to a 12345-byte object"},
		{name: "shard is an LFS pointer", breakIt: func(t *testing.T, l *sample.Layout) {
			mtWrite(t, l, "model/model-00002-of-00002.safetensors", []byte(mtLFSPointer))
		}, rule: "lfs-pointer", severity: Error, fixed: "model/model-00002-of-00002.safetensors", contains: "role weights"},
		{name: "no chat template", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/tokenizer_config.json", func(d map[string]any) { delete(d, "chat_template") })
		}, rule: "chat-template-missing", severity: Warning, fixed: "model/", contains: "HTTP 400"},
		{name: "chat template unclosed for", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/tokenizer_config.json", func(d map[string]any) {
				d["chat_template"] = "{{ bos_token }}\n{% for m in messages %}\n{{ m.content }}\n"
			})
		}, rule: "chat-template-invalid", severity: Error, fixed: "model/tokenizer_config.json", contains: "model/tokenizer_config.json:2:1: the 'for' block opened on line 2 is never closed"},
		{name: "chat_template.jinja bad syntax", breakIt: func(t *testing.T, l *sample.Layout) {
			mtWrite(t, l, "model/chat_template.jinja", []byte("{% for m in messages %}\n{{ m.content + }}\n{% endfor %}\n"))
		}, rule: "chat-template-invalid", severity: Error, fixed: "model/chat_template.jinja", contains: "model/chat_template.jinja:2:16: unexpected end of print statement"},
		{name: "shadowed tokenizer_config template broken", breakIt: func(t *testing.T, l *sample.Layout) {
			mtWrite(t, l, "model/chat_template.jinja", []byte("{% for m in messages %}{{ m.content }}{% endfor %}"))
			mtMutate(t, l, "model/tokenizer_config.json", func(d map[string]any) { d["chat_template"] = "{% if x %}" })
		}, rule: "chat-template-invalid", severity: Warning, fixed: "model/tokenizer_config.json", contains: "unused while model/chat_template.jinja exists"},
		{name: "chat template raises", breakIt: func(t *testing.T, l *sample.Layout) {
			mtWrite(t, l, "model/chat_template.jinja", []byte("{% if messages[0].role != 'system' %}{{ raise_exception('a system message is required') }}{% endif %}"))
		}, rule: "chat-template-render", severity: Warning, fixed: "model/chat_template.jinja", contains: "a system message is required"},
		{name: "chat template recurses without end", breakIt: func(t *testing.T, l *sample.Layout) {
			mtWrite(t, l, "model/chat_template.jinja", []byte("{% macro f(n) %}{{ f(n) }}{{ f(n) }}{% endmacro %}{{ f(0) }}"))
		}, rule: "chat-template-render", severity: Error, fixed: "model/chat_template.jinja", contains: "exhausts the renderer's budget"},
		{name: "chat template builds a 3 GB string", breakIt: func(t *testing.T, l *sample.Layout) {
			mtWrite(t, l, "model/chat_template.jinja", []byte(`{{ "a" * 3000000000 }}`))
		}, rule: "chat-template-render", severity: Error, fixed: "model/chat_template.jinja", contains: "output budget"},
		{name: "generation_config.json removed", breakIt: func(t *testing.T, l *sample.Layout) { mtRemove(t, l, "model/generation_config.json") },
			rule: "generation-config-missing", severity: Warning, fixed: "model/generation_config.json", contains: "stop tokens"},
		{name: "truncated shard", breakIt: func(t *testing.T, l *sample.Layout) { mtTruncate(t, l, "model/model-00001-of-00002.safetensors", 100) },
			rule: "safetensors-header", severity: Error, fixed: "model/model-00001-of-00002.safetensors", contains: "truncated file"},
		{name: "truncated adapter", breakIt: func(t *testing.T, l *sample.Layout) {
			mtTruncate(t, l, "model/loras/sql-lora/adapter_model.safetensors", 1)
		}, rule: "safetensors-header", severity: Error, fixed: "model/loras/sql-lora/adapter_model.safetensors", contains: "truncated"},
		{name: "header-length bomb", breakIt: func(t *testing.T, l *sample.Layout) {
			data, _ := os.ReadFile(l.Path("model/model-00002-of-00002.safetensors"))
			binary.LittleEndian.PutUint64(data[:8], 1<<40)
			mtWrite(t, l, "model/model-00002-of-00002.safetensors", data)
		}, rule: "safetensors-header", severity: Error, fixed: "model/model-00002-of-00002.safetensors", contains: "header-length bomb"},
		{name: "shard named by the index is missing", breakIt: func(t *testing.T, l *sample.Layout) { mtRemove(t, l, "model/model-00002-of-00002.safetensors") },
			rule: "safetensors-index", severity: Error, fixed: "model/model.safetensors.index.json", contains: "names shard model-00002-of-00002.safetensors"},
		{name: "index total_size wrong", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/model.safetensors.index.json", func(d map[string]any) {
				d["metadata"].(map[string]any)["total_size"] = l.WeightBytes + 2
			})
		}, rule: "safetensors-index", severity: Error, fixed: "model/model.safetensors.index.json", contains: "metadata.total_size"},
		{name: "index maps a tensor to the wrong shard", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/model.safetensors.index.json", func(d map[string]any) {
				wm := d["weight_map"].(map[string]any)
				if wm["lm_head.weight"] == "model-00002-of-00002.safetensors" {
					wm["lm_head.weight"] = "model-00001-of-00002.safetensors"
				} else {
					wm["lm_head.weight"] = "model-00002-of-00002.safetensors"
				}
			})
		}, rule: "safetensors-index", severity: Error, fixed: "model/model.safetensors.index.json", contains: "lm_head.weight"},
		{name: "index not JSON", breakIt: func(t *testing.T, l *sample.Layout) {
			mtWrite(t, l, "model/model.safetensors.index.json", []byte(`{"weight_map": {"a": 3}}`))
		}, rule: "safetensors-index", severity: Error, fixed: "model/model.safetensors.index.json", contains: `weight_map["a"]`},
		{name: "extra shard not in the index", breakIt: func(t *testing.T, l *sample.Layout) {
			data, _ := os.ReadFile(l.Path("model/model-00001-of-00002.safetensors"))
			mtWrite(t, l, "model/model-extra.safetensors", data)
		}, rule: "safetensors-index", severity: Error, fixed: "model/model-extra.safetensors", contains: "not named by"},
		{name: "tensor in two shards", breakIt: func(t *testing.T, l *sample.Layout) {
			// rename the last tensor of shard 2 to one that shard 1 holds
			first := mtShardWith(t, l, "model.embed_tokens.weight")
			other := "model/model-00002-of-00002.safetensors"
			if first == other {
				other = "model/model-00001-of-00002.safetensors"
			}
			mtRewriteHeader(t, l, other, func(h map[string]any) {
				var victim string
				for k := range h {
					if k != "__metadata__" && strings.HasSuffix(k, "layernorm.weight") {
						victim = k
					}
				}
				if victim == "" {
					for k := range h {
						if k != "__metadata__" {
							victim = k
						}
					}
				}
				v := h[victim].(map[string]any)
				delete(h, victim)
				// keep dtype/size valid: the duplicate gets the victim's dtype, shape and offsets
				h["model.embed_tokens.weight"] = v
			})
		}, rule: "safetensors-index", severity: Error, contains: "repeats 1 tensors",
			path: func(l *sample.Layout) string {
				if mtShardWith(t, l, "model.embed_tokens.weight") == "model/model-00001-of-00002.safetensors" {
					return "model/model-00002-of-00002.safetensors"
				}
				return "model/model-00001-of-00002.safetensors"
			}},
		{name: "vocab_size differs from embedding", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/config.json", func(d map[string]any) { d["vocab_size"] = 640 })
		}, rule: "embedding-vocab-size", severity: Error, contains: "model.embed_tokens.weight has shape [512, 64]",
			path: func(l *sample.Layout) string { return mtShardWith(t, l, "model.embed_tokens.weight") }},
		{name: "AWQ tensors without a quantization config", quant: "awq", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/config.json", func(d map[string]any) { delete(d, "quantization_config") })
		}, rule: "quant-tensors", severity: Error, contains: "quantized tensors",
			path: func(l *sample.Layout) string { return mtShardWith(t, l, q+".qweight") }},
		{name: "bf16 weights declared AWQ", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/config.json", func(d map[string]any) {
				d["quantization_config"] = map[string]any{"quant_method": "awq", "bits": 4, "group_size": 32, "zero_point": true}
			})
		}, rule: "quant-tensors", severity: Error, contains: "linear projections unquantized",
			path: func(l *sample.Layout) string { return mtShardWith(t, l, q+".weight") }},
		{name: "AWQ checkpoint declared GPTQ lacks g_idx", quant: "awq", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/config.json", func(d map[string]any) {
				d["quantization_config"].(map[string]any)["quant_method"] = "gptq"
			})
		}, rule: "quant-tensors", severity: Error, contains: ".g_idx",
			path: func(l *sample.Layout) string { return mtShardWith(t, l, q+".qweight") }},
		{name: "AWQ layer without scales", quant: "awq", breakIt: func(t *testing.T, l *sample.Layout) {
			mtRewriteHeader(t, l, mtShardWith(t, l, q+".scales"), func(h map[string]any) {
				h[q+".scales_lost"] = h[q+".scales"]
				delete(h, q+".scales")
			})
		}, rule: "quant-tensors", severity: Error, contains: q + ".scales",
			path: func(l *sample.Layout) string { return mtShardWith(t, l, q+".qweight") }},
		{name: "FP8 weight without weight_scale", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/config.json", func(d map[string]any) {
				d["quantization_config"] = map[string]any{"quant_method": "fp8", "activation_scheme": "dynamic"}
			})
			mtRewriteHeader(t, l, mtShardWith(t, l, q+".weight"), func(h map[string]any) {
				e := h[q+".weight"].(map[string]any)
				e["dtype"] = "F8_E4M3"
				e["shape"] = []any{64, 128} // same bytes as BF16 [64, 64]
			})
		}, rule: "quant-tensors", severity: Error, contains: "without a weight_scale",
			path: func(l *sample.Layout) string { return mtShardWith(t, l, q+".weight") }},
		{name: "declared FP8 without FP8 weights", breakIt: func(t *testing.T, l *sample.Layout) {
			mtMutate(t, l, "model/config.json", func(d map[string]any) {
				d["quantization_config"] = map[string]any{"quant_method": "fp8"}
			})
		}, rule: "quant-tensors", severity: Error, fixed: "model/model.safetensors.index.json", contains: "no shard holds an F8_E4M3 weight"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := mtGenSample(t, tc.quant)
			want := tc.fixed
			if tc.path != nil {
				want = tc.path(l) // before breaking: the index still names the original shards
			}
			tc.breakIt(t, l)
			rep := mtLintSample(t, l)
			fs := mtModelFindings(rep)
			for _, f := range fs {
				if f.Rule == tc.rule && f.Severity == tc.severity && f.Path == want && strings.Contains(f.Message, tc.contains) {
					if f.Hint == "" || strings.Contains(f.Message, "\n") {
						t.Errorf("finding lacks a hint or is not one line: %+v", f)
					}
					return
				}
			}
			t.Fatalf("want %s %s at %s containing %q; got:%s", tc.severity, tc.rule, want, tc.contains, mtDump(fs))
		})
	}
}

// TestModelRuleMetadata keeps the rule table well-formed: ids unique, each with a summary, a hint
// and a check.
func TestModelRuleMetadata(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range modelRules {
		if seen[r.ID] {
			t.Errorf("duplicate rule id %s", r.ID)
		}
		seen[r.ID] = true
		if r.Summary == "" || r.Hint == "" || r.Check == nil || (r.Severity != Error && r.Severity != Warning) {
			t.Errorf("rule %s is incomplete: %+v", r.ID, r)
		}
	}
	if len(seen) != 19 {
		t.Errorf("%d model rules, want 19", len(seen))
	}
}

// TestModelContextAPI checks the Context methods other rule sets use.
func TestModelContextAPI(t *testing.T) {
	l := mtGenSample(t, "awq")
	// move the quantization block to a standalone AutoAWQ file
	var block map[string]any
	mtMutate(t, l, "model/config.json", func(d map[string]any) {
		block = d["quantization_config"].(map[string]any)
		delete(d, "quantization_config")
	})
	data, err := json.Marshal(block)
	if err != nil {
		t.Fatal(err)
	}
	mtWrite(t, l, "model/quantize_config.json", data)
	ctx := context.Background()
	m, err := manifest.Build(ctx, manifest.BuildOptions{ModelDir: l.ModelDir})
	if err != nil {
		t.Fatal(err)
	}
	c := &Context{Ctx: ctx, Manifest: m, Src: DirSource{Model: l.ModelDir}, Log: nil, cache: map[string]cached{}}
	q, err := c.QuantConfig()
	if err != nil || q == nil || q.Method != "awq" || q.Source != "model/quantize_config.json" {
		t.Fatalf("QuantConfig() = %+v, %v", q, err)
	}
	hs := c.SafetensorsHeaders()
	for _, p := range []string{"model/model-00001-of-00002.safetensors", "model/model-00002-of-00002.safetensors", "model/loras/sql-lora/adapter_model.safetensors"} {
		if hs[p] == nil {
			t.Errorf("SafetensorsHeaders() lacks %s (has %d headers)", p, len(hs))
		}
	}
	if fs := mtModelFindings(Run(ctx, m, DirSource{Model: l.ModelDir}, nil)); len(fs) > 0 {
		t.Errorf("standalone quantize_config.json: unexpected findings:%s", mtDump(fs))
	}
}

// TestModelRulesWithoutSource runs the model rules on a manifest alone: rules that need file
// contents stay quiet, none of them fails.
func TestModelRulesWithoutSource(t *testing.T) {
	l := mtGenSample(t, "")
	ctx := context.Background()
	m, err := manifest.Build(ctx, manifest.BuildOptions{ModelDir: l.ModelDir})
	if err != nil {
		t.Fatal(err)
	}
	rep := Run(ctx, m, nil, nil)
	for _, f := range mtModelFindings(rep) {
		t.Errorf("finding without a source: %+v", f)
	}
	for _, f := range rep.Findings {
		if strings.Contains(f.Message, "internal error") {
			t.Errorf("rule crashed: %+v", f)
		}
	}
}
