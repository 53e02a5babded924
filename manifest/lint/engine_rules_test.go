package lint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/sample"
	"lifeboat/manifest"
)

// Tests of the engine, LoRA and deployment rules (rules_engine.go) on generated sample repositories.

func etRuleIDs() map[string]bool {
	ids := map[string]bool{}
	for _, r := range engineRules {
		ids[r.ID] = true
	}
	return ids
}

func etGen(t *testing.T, o sample.Options) *sample.Layout {
	t.Helper()
	l, err := sample.Generate(context.Background(), filepath.Join(t.TempDir(), "s"), o)
	if err != nil {
		t.Fatalf("generate sample: %v", err)
	}
	return l
}

type etBuild struct {
	noEngine, noDeploy bool
}

func etLint(t *testing.T, l *sample.Layout, b etBuild) []Finding {
	t.Helper()
	ctx := context.Background()
	o := manifest.BuildOptions{ModelDir: l.ModelDir, EngineFile: l.EngineFile, DeployPaths: []string{l.DeployDir}}
	if b.noEngine {
		o.EngineFile = ""
	}
	if b.noDeploy {
		o.DeployPaths = nil
	}
	m, err := manifest.Build(ctx, o)
	if err != nil {
		t.Fatalf("build manifest: %v", err)
	}
	rep := Run(ctx, m, DirSource{Model: l.ModelDir}, nil)
	ids := etRuleIDs()
	var out []Finding
	for _, f := range rep.Findings {
		if ids[f.Rule] || strings.HasPrefix(f.Message, "internal error") {
			out = append(out, f)
		}
	}
	return out
}

func etDump(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "\n  %s %s %s: %s", f.Severity, f.Rule, f.Path, f.Message)
	}
	if len(fs) == 0 {
		b.WriteString(" (none)")
	}
	return b.String()
}

// etEdit rewrites a text file of the sample (rel is relative to the sample root).
func etEdit(t *testing.T, l *sample.Layout, rel string, fn func(s string) string) {
	t.Helper()
	p := l.Path(rel)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	out := fn(string(data))
	if out == string(data) {
		t.Fatalf("edit of %s changed nothing", rel)
	}
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

func etReplace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

func etAppend(text string) func(string) string {
	return func(s string) string { return s + text }
}

func etMutate(t *testing.T, l *sample.Layout, rel string, fn func(doc map[string]any)) {
	t.Helper()
	if err := l.MutateJSON(rel, func(doc map[string]any) error { fn(doc); return nil }); err != nil {
		t.Fatal(err)
	}
}

func TestEngineRulesCleanSample(t *testing.T) {
	for _, quant := range []string{"", "awq"} {
		t.Run("quant="+quant, func(t *testing.T) {
			if fs := etLint(t, etGen(t, sample.Options{Quant: quant}), etBuild{}); len(fs) > 0 {
				t.Fatalf("clean sample has engine/LoRA/deploy findings:%s", etDump(fs))
			}
		})
	}
	t.Run("no-lora", func(t *testing.T) {
		if fs := etLint(t, etGen(t, sample.Options{NoLoRA: true, MaxModelLen: 131072}), etBuild{}); len(fs) > 0 {
			t.Fatalf("clean sample without LoRA has findings:%s", etDump(fs))
		}
	})
}

type etCase struct {
	name  string
	opts  sample.Options
	build etBuild
	edit  func(t *testing.T, l *sample.Layout)
	// want: every listed finding must appear (rule, severity, path, message substring);
	// none: rules that must not report.
	want []etWant
	none []string
}

type etWant struct {
	rule string
	sev  Severity
	path string
	msg  string
}

func (w etWant) match(f Finding) bool {
	return f.Rule == w.rule && f.Severity == w.sev && f.Path == w.path && strings.Contains(f.Message, w.msg)
}

const (
	etEngine = "engine/engine.yaml"
	etDeploy = "deploy/deployment.yaml"
	etLoRA   = "model/loras/sql-lora/"
	etAdCfg  = "model/loras/sql-lora/adapter_config.json"
)

func etEngineEdit(fn func(string) string) func(t *testing.T, l *sample.Layout) {
	return func(t *testing.T, l *sample.Layout) { etEdit(t, l, "engine/engine.yaml", fn) }
}

func etAdapterEdit(fn func(doc map[string]any)) func(t *testing.T, l *sample.Layout) {
	return func(t *testing.T, l *sample.Layout) { etMutate(t, l, "model/loras/sql-lora/adapter_config.json", fn) }
}

func TestEngineRules(t *testing.T) {
	mount := "/models/Llama-3.1-8B-Instruct-demo"
	cases := []etCase{
		// engine-config-missing
		{name: "engine missing", build: etBuild{noEngine: true},
			want: []etWant{{"engine-config-missing", Warning, "engine/", "no engine config"}}},

		// engine-config-invalid
		{name: "bad int", edit: etEngineEdit(etReplace("max-model-len: 8192", "max-model-len: abc")),
			want: []etWant{{"engine-config-invalid", Error, etEngine, `engine/engine.yaml:5: max-model-len: want an integer`}}},
		{name: "not a mapping", edit: etEngineEdit(func(string) string { return "- model: x\n" }),
			want: []etWant{{"engine-config-invalid", Error, etEngine, "engine/engine.yaml:1: want a mapping of vLLM flag names"}}},
		{name: "yaml syntax", edit: etEngineEdit(etAppend("bad: [unclosed\n")),
			want: []etWant{{"engine-config-invalid", Error, etEngine, "engine/engine.yaml:"}}},
		{name: "short key", edit: etEngineEdit(etReplace("tensor-parallel-size: 1", "tp: 1")),
			want: []etWant{{"engine-config-invalid", Error, etEngine, `engine/engine.yaml:7: tp: "tp" is a command-line short option`}}},
		{name: "underscore key", edit: etEngineEdit(etReplace("max-model-len:", "max_model_len:")),
			want: []etWant{{"engine-config-invalid", Warning, etEngine, `engine/engine.yaml:5: max_model_len: use the flag's long name "max-model-len"`}},
			none: []string{"engine-unknown-key", "context-length"}},
		{name: "duplicate key", edit: etEngineEdit(etAppend("port: 9000\n")),
			want: []etWant{{"engine-config-invalid", Error, etEngine, "engine/engine.yaml:16: port: set again (first set on line 15)"}}},
		{name: "lora yaml map", edit: etEngineEdit(etReplace(`  - '{"name":"sql-lora","path":"`+mount+`/loras/sql-lora","base_model_name":"llama-demo"}'`,
			"  - {name: sql-lora, path: "+mount+"/loras/sql-lora}")),
			want: []etWant{{"engine-config-invalid", Error, etEngine, "engine/engine.yaml:14: lora-modules[0]: a YAML mapping"}},
			none: []string{"lora-missing"}},

		// engine-unknown-key
		{name: "typo", edit: etEngineEdit(etReplace("max-model-len:", "max-model-length:")),
			want: []etWant{{"engine-unknown-key", Error, etEngine, `engine/engine.yaml:5: max-model-length is not a vllm serve flag`},
				{"engine-unknown-key", Error, etEngine, `did you mean "max-model-len"?`}}},
		{name: "legacy flag", edit: etEngineEdit(etAppend("use-v2-block-manager: true\n")),
			want: []etWant{{"engine-unknown-key", Error, etEngine, "use-v2-block-manager was a vllm serve flag but is gone (removed in v0.7)"}}},

		// engine-path-unresolved
		{name: "tokenizer missing", edit: etEngineEdit(etAppend("tokenizer: " + mount + "/tok\n")),
			want: []etWant{{"engine-path-unresolved", Error, etEngine, "engine/engine.yaml:16: tokenizer " + mount + "/tok (tokenizer directory) resolves to model/tok, which is not in the bundle"}}},
		{name: "tokenizer ok", edit: etEngineEdit(etAppend("tokenizer: " + mount + "\nchat-template: " + mount + "/tokenizer_config.json\ngeneration-config: " + mount + "\n")),
			none: []string{"engine-path-unresolved"}},
		{name: "chat template missing", edit: etEngineEdit(etAppend("chat-template: " + mount + "/chat_template.jinja\n")),
			want: []etWant{{"engine-path-unresolved", Error, etEngine, "resolves to model/chat_template.jinja"}}},
		{name: "chat template outside", edit: etEngineEdit(etAppend("chat-template: /etc/vllm/chat.jinja\n")),
			want: []etWant{{"engine-path-unresolved", Warning, etEngine, "chat-template /etc/vllm/chat.jinja is outside the model mount " + mount}}},
		{name: "inline template and hub tokenizer", edit: etEngineEdit(etAppend("chat-template: \"{% for m in messages %}{{ m.content }}{% endfor %}\"\ntokenizer: meta-llama/Llama-3.1-8B-Instruct\n")),
			none: []string{"engine-path-unresolved"}},
		{name: "model is a hub id", edit: etEngineEdit(etReplace("model: "+mount, "model: meta-llama/Llama-3.1-8B-Instruct")),
			want: []etWant{{"engine-path-unresolved", Warning, etEngine, `model "meta-llama/Llama-3.1-8B-Instruct" is a Hugging Face Hub id`},
				{"engine-path-unresolved", Warning, etEngine, "lora-modules[0] sql-lora: the model mount is unknown"}}},
		{name: "lora outside mount", edit: etEngineEdit(etReplace(mount+"/loras/sql-lora", "/adapters/sql-lora")),
			want: []etWant{{"engine-path-unresolved", Warning, etEngine, "lora-modules[0] sql-lora: path /adapters/sql-lora is outside the model mount"}},
			none: []string{"lora-missing"}},

		// engine-revision-unpinned
		{name: "revision branch", edit: etEngineEdit(etAppend("revision: main\n")),
			want: []etWant{{"engine-revision-unpinned", Warning, etEngine, `engine/engine.yaml:16: revision "main" is not a 40-hex commit`}}},
		{name: "revision pinned", edit: etEngineEdit(etAppend("revision: 0123456789abcdef0123456789abcdef01234567\n")),
			none: []string{"engine-revision-unpinned"}},

		// quant-config-mismatch
		{name: "quant on bf16", edit: etEngineEdit(etAppend("quantization: awq\n")),
			want: []etWant{{"quant-config-mismatch", Error, etEngine, "engine/engine.yaml:16: quantization awq needs a awq checkpoint, but the model has no quantization config"}}},
		{name: "online fp8 on bf16", edit: etEngineEdit(etAppend("quantization: fp8\n")),
			none: []string{"quant-config-mismatch"}},
		{name: "gptq on awq", opts: sample.Options{Quant: "awq"}, edit: etEngineEdit(etReplace("quantization: awq", "quantization: gptq")),
			want: []etWant{{"quant-config-mismatch", Error, etEngine, "engine/engine.yaml:4: quantization gptq does not match the model's quantization method awq (from model/config.json)"}}},
		{name: "awq_marlin on awq", opts: sample.Options{Quant: "awq"}, edit: etEngineEdit(etReplace("quantization: awq", "quantization: awq_marlin")),
			none: []string{"quant-config-mismatch"}},
		{name: "engine unset on awq", opts: sample.Options{Quant: "awq"}, edit: etEngineEdit(etReplace("quantization: awq\n", "")),
			none: []string{"quant-config-mismatch"}},
		{name: "compressed-tensors export", opts: sample.Options{Quant: "awq"},
			edit: func(t *testing.T, l *sample.Layout) {
				etMutate(t, l, "model/config.json", func(d map[string]any) {
					d["quantization_config"].(map[string]any)["quant_method"] = "compressed_tensors"
				})
			},
			want: []etWant{{"quant-config-mismatch", Error, etEngine, "does not match the model's quantization method compressed-tensors"}}},
		{name: "standalone quant file only", opts: sample.Options{Quant: "awq"},
			edit: func(t *testing.T, l *sample.Layout) {
				var q any
				etMutate(t, l, "model/config.json", func(d map[string]any) { q = d["quantization_config"]; delete(d, "quantization_config") })
				if err := os.WriteFile(l.Path("model/quant_config.json"), []byte(`{"zero_point": true, "q_group_size": 32, "w_bit": 4, "version": "GEMM"}`), 0o644); err != nil {
					t.Fatal(err)
				}
				_ = q
				etEdit(t, l, "engine/engine.yaml", etReplace("quantization: awq\n", ""))
			},
			want: []etWant{{"quant-config-mismatch", Warning, etEngine, "is only in model/quant_config.json"}}},

		{name: "compression_config", edit: func(t *testing.T, l *sample.Layout) {
			etMutate(t, l, "model/config.json", func(d map[string]any) {
				d["compression_config"] = map[string]any{"quant_method": "compressed-tensors", "format": "pack-quantized"}
			})
			etEdit(t, l, "engine/engine.yaml", etAppend("quantization: compressed-tensors\n"))
		}, none: []string{"quant-config-mismatch"}},

		// context-length
		{name: "too long", edit: etEngineEdit(etReplace("max-model-len: 8192", "max-model-len: 200000")),
			want: []etWant{{"context-length", Error, etEngine, "engine/engine.yaml:5: max-model-len 200000 exceeds the 131072 tokens vLLM derives from model/config.json (max_position_embeddings; rope_scaling llama3 does not extend it): vLLM refuses to start"}}},
		{name: "human form", edit: etEngineEdit(etReplace("max-model-len: 8192", "max-model-len: 128K")),
			none: []string{"context-length", "engine-config-invalid"}},
		{name: "human form too long", edit: etEngineEdit(etReplace("max-model-len: 8192", "max-model-len: 132k")),
			want: []etWant{{"context-length", Error, etEngine, "max-model-len 132000 exceeds the 131072"}}},
		{name: "yarn factor", edit: func(t *testing.T, l *sample.Layout) {
			etMutate(t, l, "model/config.json", func(d map[string]any) {
				d["max_position_embeddings"] = 32768
				d["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
			})
			etEdit(t, l, "engine/engine.yaml", etReplace("max-model-len: 8192", "max-model-len: 131073"))
		}, want: []etWant{{"context-length", Error, etEngine, "exceeds the 131072 tokens vLLM derives from model/config.json (max_position_embeddings, × rope_scaling factor 4 (yarn) applied to original_max_position_embeddings)"}}},
		{name: "allowed long", edit: func(t *testing.T, l *sample.Layout) {
			etEdit(t, l, "engine/engine.yaml", etReplace("max-model-len: 8192", "max-model-len: 200000"))
			etEdit(t, l, "deploy/deployment.yaml", etReplace("            - name: HF_HUB_OFFLINE", "            - name: VLLM_ALLOW_LONG_MAX_MODEL_LEN\n              value: \"1\"\n            - name: HF_HUB_OFFLINE"))
		}, want: []etWant{{"context-length", Warning, etEngine, "sets VLLM_ALLOW_LONG_MAX_MODEL_LEN"}}},
		{name: "hf-overrides extend", edit: func(t *testing.T, l *sample.Layout) {
			etMutate(t, l, "model/config.json", func(d map[string]any) { delete(d, "rope_scaling"); d["max_position_embeddings"] = 8192 })
			etEdit(t, l, "engine/engine.yaml", etAppend("hf-overrides:\n  rope_scaling: {rope_type: dynamic, factor: 2.0}\n"))
			etEdit(t, l, "engine/engine.yaml", etReplace("max-model-len: 8192", "max-model-len: 16384"))
		}, none: []string{"context-length", "rope-scaling-dropped"}},

		// rope-scaling-dropped
		{name: "rope dropped", opts: sample.Options{MaxModelLen: 32768}, edit: func(t *testing.T, l *sample.Layout) {
			etMutate(t, l, "model/config.json", func(d map[string]any) { delete(d, "rope_scaling") })
		}, want: []etWant{{"rope-scaling-dropped", Warning, "model/config.json", "model/config.json has no rope_scaling, yet its own evidence says max_position_embeddings 131072 was reached by one: model_type llama at rope_theta 500000 is Llama 3"}},
			none: []string{"context-length"}},
		{name: "rope dropped within original length", edit: func(t *testing.T, l *sample.Layout) {
			etMutate(t, l, "model/config.json", func(d map[string]any) { delete(d, "rope_scaling") })
		}, none: []string{"rope-scaling-dropped"}},

		// lora-missing
		{name: "adapter weights missing", edit: func(t *testing.T, l *sample.Layout) {
			os.Remove(l.Path("model/loras/sql-lora/adapter_model.safetensors"))
		}, want: []etWant{{"lora-missing", Error, etLoRA, "engine/engine.yaml:14: lora-modules sql-lora: model/loras/sql-lora/ has no adapter_model.safetensors"}}},
		{name: "adapter missing", edit: func(t *testing.T, l *sample.Layout) {
			os.RemoveAll(l.Path("model/loras/sql-lora"))
		}, want: []etWant{{"lora-missing", Error, etLoRA, "path " + mount + "/loras/sql-lora resolves to model/loras/sql-lora/, which is not in the bundle"}},
			none: []string{"engine-path-unresolved"}},
		{name: "adapter .bin weights", edit: func(t *testing.T, l *sample.Layout) {
			os.Rename(l.Path("model/loras/sql-lora/adapter_model.safetensors"), l.Path("model/loras/sql-lora/adapter_model.bin"))
		}, none: []string{"lora-missing"}},

		// lora-not-enabled
		{name: "lora not enabled", edit: etEngineEdit(etReplace("enable-lora: true\n", "")),
			want: []etWant{{"lora-not-enabled", Error, etEngine, "engine/engine.yaml:12: lora-modules lists 1 adapter(s) but enable-lora is not set"}}},
		{name: "lora disabled", edit: etEngineEdit(etReplace("enable-lora: true", "enable-lora: false")),
			want: []etWant{{"lora-not-enabled", Error, etEngine, "enable-lora is false (engine/engine.yaml:9)"}}, none: []string{"lora-rank"}},

		// lora-invalid
		{name: "adapter without r", edit: etAdapterEdit(func(d map[string]any) { delete(d, "r") }),
			want: []etWant{{"lora-invalid", Error, etAdCfg, "model/loras/sql-lora/adapter_config.json: field r: missing"}}},
		{name: "adapter garbage", edit: func(t *testing.T, l *sample.Layout) {
			os.WriteFile(l.Path("model/loras/sql-lora/adapter_config.json"), []byte("{not json"), 0o644)
		}, want: []etWant{{"lora-invalid", Error, etAdCfg, "model/loras/sql-lora/adapter_config.json: not a JSON object"}}},
		{name: "adapter not lora", edit: etAdapterEdit(func(d map[string]any) { d["peft_type"] = "IA3" }),
			want: []etWant{{"lora-invalid", Error, etAdCfg, "peft_type is IA3, not LORA"}}},

		// lora-rank
		{name: "rank too high", edit: etAdapterEdit(func(d map[string]any) { d["r"] = 32 }),
			want: []etWant{{"lora-rank", Error, etAdCfg, "r = 32 exceeds max-lora-rank 16 (engine/engine.yaml:10)"}}},
		{name: "rank over default", edit: func(t *testing.T, l *sample.Layout) {
			etMutate(t, l, "model/loras/sql-lora/adapter_config.json", func(d map[string]any) { d["r"] = 64 })
			etEdit(t, l, "engine/engine.yaml", etReplace("max-lora-rank: 16\n", ""))
		}, want: []etWant{{"lora-rank", Error, etAdCfg, "r = 64 exceeds max-lora-rank 16 (the default)"}}},
		{name: "rank not allowed", edit: etEngineEdit(etReplace("max-lora-rank: 16", "max-lora-rank: 24")),
			want: []etWant{{"lora-rank", Error, etEngine, "engine/engine.yaml:10: max-lora-rank 24 is not one of vLLM's allowed values"}}},

		// lora-unsupported
		{name: "dora", edit: etAdapterEdit(func(d map[string]any) { d["use_dora"] = true }),
			want: []etWant{{"lora-unsupported", Error, etAdCfg, "use_dora is true"}}},
		{name: "modules_to_save", edit: etAdapterEdit(func(d map[string]any) { d["modules_to_save"] = []any{"lm_head", "embed_tokens"} }),
			want: []etWant{{"lora-unsupported", Error, etAdCfg, "modules_to_save is [lm_head embed_tokens]"}}},

		// lora-base-model
		{name: "wrong base", edit: etAdapterEdit(func(d map[string]any) { d["base_model_name_or_path"] = "mistralai/Mistral-7B-v0.3" }),
			want: []etWant{{"lora-base-model", Error, etAdCfg, "the adapter was trained on mistralai/Mistral-7B-v0.3, which matches none of the served model's names (lifeboat/Llama-3.1-8B-Instruct-demo"}}},
		{name: "base by last element", edit: etAdapterEdit(func(d map[string]any) { d["base_model_name_or_path"] = "/home/me/ckpt/llama-3.1-8b-instruct-demo" }),
			none: []string{"lora-base-model"}},
		{name: "base of quantized re-upload", edit: etAdapterEdit(func(d map[string]any) { d["base_model_name_or_path"] = "other-org/Llama-3.1-8B-Instruct-demo-AWQ-INT4" }),
			none: []string{"lora-base-model"}},
		{name: "base unknown", edit: etAdapterEdit(func(d map[string]any) { d["base_model_name_or_path"] = nil }),
			want: []etWant{{"lora-base-model", Warning, etAdCfg, "base_model_name_or_path is not set"}}},

		// deploy-missing
		{name: "deploy missing", build: etBuild{noDeploy: true},
			want: []etWant{{"deploy-missing", Warning, "deploy/", "no deployment files"}}},

		// deploy-yaml-invalid
		{name: "deploy syntax", edit: func(t *testing.T, l *sample.Layout) {
			etEdit(t, l, "deploy/deployment.yaml", etReplace("  replicas: 1", "  replicas: [1"))
		}, want: []etWant{{"deploy-yaml-invalid", Error, etDeploy, "deploy/deployment.yaml:"}}},
		{name: "deploy no kind", edit: func(t *testing.T, l *sample.Layout) {
			etEdit(t, l, "deploy/deployment.yaml", etReplace("kind: Service\n", ""))
		}, want: []etWant{{"deploy-yaml-invalid", Error, etDeploy, "deploy/deployment.yaml:80: object (apiVersion v1) without kind"}}},
		{name: "deploy helm template", edit: func(t *testing.T, l *sample.Layout) {
			os.MkdirAll(l.Path("deploy/chart/templates"), 0o755)
			os.WriteFile(l.Path("deploy/chart/templates/svc.yaml"), []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\n  labels: {{- include \"x\" . | nindent 4 }}\n"), 0o644)
		}, want: []etWant{{"deploy-yaml-invalid", Warning, "deploy/chart/templates/svc.yaml", "looks like a template"}}},
		{name: "deploy file too large to embed", edit: func(t *testing.T, l *sample.Layout) {
			big := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  blob: \"" + strings.Repeat("x", manifest.DefaultEmbedLimit+10) + "\"\n"
			os.WriteFile(l.Path("deploy/big.yaml"), []byte(big), 0o644)
		}, want: []etWant{{"deploy-yaml-invalid", Warning, "deploy/big.yaml", "too large to be embedded"}}},

		// deploy-image-unpinned
		{name: "image by tag", edit: func(t *testing.T, l *sample.Layout) {
			etEdit(t, l, "deploy/deployment.yaml", func(s string) string {
				return strings.Replace(s, "vllm/vllm-openai@"+sample.ImageDigest, "vllm/vllm-openai:v0.9.2", 1)
			})
		}, want: []etWant{{"deploy-image-unpinned", Warning, etDeploy, "deploy/deployment.yaml:25: Deployment llama-demo container vllm: image vllm/vllm-openai:v0.9.2 is referenced by tag"}}},
		{name: "init container by tag", edit: func(t *testing.T, l *sample.Layout) {
			etEdit(t, l, "deploy/deployment.yaml", etReplace("      containers:\n", "      initContainers:\n        - name: wait\n          image: busybox\n      containers:\n"))
		}, want: []etWant{{"deploy-image-unpinned", Warning, etDeploy, "initContainer wait: image busybox is referenced by tag"}},
			none: []string{"deploy-model-mount"}},
		{name: "dockerfile by tag", edit: func(t *testing.T, l *sample.Layout) {
			etEdit(t, l, "deploy/Dockerfile", func(s string) string {
				return strings.Replace(s, "FROM vllm/vllm-openai@"+sample.ImageDigest, "FROM vllm/vllm-openai:latest", 1)
			})
		}, want: []etWant{{"deploy-image-unpinned", Warning, "deploy/Dockerfile", "deploy/Dockerfile:3: FROM vllm/vllm-openai:latest is referenced by tag"}}},
		{name: "dockerfile build arg", edit: func(t *testing.T, l *sample.Layout) {
			etEdit(t, l, "deploy/Dockerfile", func(s string) string {
				return strings.Replace(s, "FROM vllm/vllm-openai@"+sample.ImageDigest, "ARG BASE=vllm/vllm-openai@"+sample.ImageDigest+"\nFROM ${BASE} AS base\nFROM base", 1)
			})
		}, want: []etWant{{"deploy-image-unpinned", Warning, "deploy/Dockerfile", "FROM ${BASE}: the base image comes from a build argument, so whether it is pinned cannot be checked (unpinned-unknown)"}}},

		// deploy-model-mount
		{name: "model not mounted", edit: func(t *testing.T, l *sample.Layout) {
			etEdit(t, l, "deploy/deployment.yaml", etReplace("              mountPath: "+mount+"\n", "              mountPath: /data\n"))
		}, want: []etWant{{"deploy-model-mount", Error, etDeploy, "deploy/deployment.yaml:24: Deployment llama-demo container vllm runs vLLM with model " + mount + " (engine config model) but mounts no volume at that path or a parent of it (mounts: /data, /etc/vllm, /dev/shm)"}}},
		{name: "parent mounted", edit: func(t *testing.T, l *sample.Layout) {
			etEdit(t, l, "deploy/deployment.yaml", etReplace("              mountPath: "+mount+"\n", "              mountPath: /models/\n"))
		}, none: []string{"deploy-model-mount"}},
		{name: "positional model wins", edit: func(t *testing.T, l *sample.Layout) {
			etEdit(t, l, "deploy/deployment.yaml", etReplace(`args: ["--config"`, `args: ["serve", "/srv/other", "--config"`))
		}, want: []etWant{{"deploy-model-mount", Error, etDeploy, "runs vLLM with model /srv/other (positional model argument)"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := etGen(t, tc.opts)
			if tc.edit != nil {
				tc.edit(t, l)
			}
			fs := etLint(t, l, tc.build)
			for _, w := range tc.want {
				found := false
				for _, f := range fs {
					if w.match(f) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("want %s %s at %s containing %q; got:%s", w.sev, w.rule, w.path, w.msg, etDump(fs))
				}
			}
			for _, id := range tc.none {
				for _, f := range fs {
					if f.Rule == id {
						t.Errorf("unexpected %s finding: %s", id, f.Message)
					}
				}
			}
			for _, f := range fs {
				if strings.HasPrefix(f.Message, "internal error") {
					t.Errorf("rule panicked: %s", f.Message)
				}
			}
		})
	}
}

func TestEngineRuleMetadata(t *testing.T) {
	want := []string{"engine-config-missing", "engine-config-invalid", "engine-unknown-key", "engine-path-unresolved",
		"engine-revision-unpinned", "quant-config-mismatch", "context-length", "rope-scaling-dropped", "lora-missing",
		"lora-not-enabled", "lora-invalid", "lora-rank", "lora-unsupported", "lora-base-model", "deploy-missing",
		"deploy-yaml-invalid", "deploy-image-unpinned", "deploy-model-mount", "tensor-parallel", "pipeline-parallel",
		"gpu-count", "replica-mismatch", "served-model-name", "deploy-secret"}
	ids := etRuleIDs()
	if len(ids) != len(want) || len(engineRules) != len(want) {
		t.Errorf("engineRules has %d rules (%d ids), want %d", len(engineRules), len(ids), len(want))
	}
	for _, id := range want {
		if !ids[id] {
			t.Errorf("rule %s missing", id)
		}
	}
	all := map[string]int{}
	for _, r := range Rules() {
		all[r.ID]++
	}
	for _, r := range engineRules {
		if all[r.ID] != 1 {
			t.Errorf("rule id %s is used %d times across rule sets", r.ID, all[r.ID])
		}
		if r.Check == nil || r.Summary == "" || r.Hint == "" || (r.Severity != Error && r.Severity != Warning) {
			t.Errorf("rule %s is incomplete: %+v", r.ID, r)
		}
	}
}

// Without a source (lint of a manifest alone), the engine and deployment rules still run on the
// embedded files, and adapter rules that need model files stay quiet.
func TestEngineRulesWithoutSource(t *testing.T) {
	l := etGen(t, sample.Options{})
	etEdit(t, l, "engine/engine.yaml", etReplace("max-model-len: 8192", "max-model-len: 300000"))
	ctx := context.Background()
	m, err := manifest.Build(ctx, manifest.BuildOptions{ModelDir: l.ModelDir, EngineFile: l.EngineFile, DeployPaths: []string{l.DeployDir}})
	if err != nil {
		t.Fatal(err)
	}
	rep := Run(ctx, m, nil, nil)
	ids := etRuleIDs()
	for _, f := range rep.Findings {
		if ids[f.Rule] && f.Rule != "context-length" || strings.HasPrefix(f.Message, "internal error") {
			t.Errorf("unexpected finding without a source: %s %s %s", f.Rule, f.Path, f.Message)
		}
	}
}
