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

// Tests of the engine rules on real-shape deployments (testdata/corpus, sources in its README):
// each lints without an error as written, and each one-line edit that makes vLLM refuse to start
// fails, naming the deploy file and the line of the flag.

// corpusStyle is how a corpus file writes one more flag.
type corpusStyle int

const (
	inlineFlag corpusStyle = iota // inside a command-line string: " --flag value"
	listEq                        // one list item: "- --flag=value"
	listPair                      // two list items: "- --flag", "- value"
	listPairQ                     // two quoted list items: - "--flag", - "value"
)

type corpusFile struct {
	name   string
	anchor string // a unique text on the line after which (or in which) flags are added
	style  corpusStyle
	// folded: the command line is a multi-line double-quoted or folded (">") YAML string, whose
	// line breaks YAML folds away, so a flag's line is the string's first line.
	folded   bool
	modelEnv bool // the model comes from $(MODEL_ID), set with a literal value
}

var corpusFiles = []corpusFile{
	{name: "vllm-docs-k8s.yaml", anchor: "--max_num_batched_tokens 1024", style: inlineFlag},
	{name: "gke-vllm-tutorial.yaml", anchor: "- --max-num-seqs=4", style: listEq, modelEnv: true},
	{name: "production-stack.yaml", anchor: `- "bfloat16"`, style: listPairQ},
	{name: "gaie-gpu-deployment.yaml", anchor: `- "12"`, style: listPairQ},
	{name: "aibrix-deployment.yaml", anchor: `- "12288"`, style: listPair},
	{name: "kubernetes-examples-vllm.yaml", anchor: "- --port=8080", style: listEq, modelEnv: true},
	{name: "lws-vllm.yaml", anchor: "--pipeline_parallel_size 2", style: inlineFlag, folded: true},
	{name: "vllm-helm-chart.yaml", anchor: `- "8000"`, style: listPair},
	{name: "aibrix-rayclusterfleet.yaml", anchor: "--dtype half", style: inlineFlag, folded: true},
	{name: "kserve-llmisvc.yaml"},
}

// addFlags adds flags (pairs of name and value; "" for a switch) in the file's style and returns
// the new text and the line of the last flag added.
func (cf corpusFile) addFlags(t *testing.T, text string, flags ...[2]string) (string, int) {
	t.Helper()
	lines := strings.Split(text, "\n")
	at := -1
	for i, l := range lines {
		if strings.Contains(l, cf.anchor) {
			if at >= 0 {
				t.Fatalf("%s: anchor %q is not unique", cf.name, cf.anchor)
			}
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("%s: anchor %q not found", cf.name, cf.anchor)
	}
	line := at + 1
	if cf.style == inlineFlag {
		var add strings.Builder
		for _, f := range flags {
			add.WriteString(" --" + f[0])
			if f[1] != "" {
				add.WriteString(" " + f[1])
			}
		}
		lines[at] = strings.Replace(lines[at], cf.anchor, cf.anchor+add.String(), 1)
		if cf.folded {
			for line > 1 && !strings.Contains(lines[line-1], `- "`) && !strings.HasSuffix(lines[line-1], "- >") {
				line--
			}
		}
		return strings.Join(lines, "\n"), line
	}
	indent := lines[at][:strings.Index(lines[at], "- ")]
	var ins []string
	for _, f := range flags {
		switch cf.style {
		case listEq:
			item := "--" + f[0]
			if f[1] != "" {
				item += "=" + f[1]
			}
			ins = append(ins, indent+"- "+item)
			line = at + 1 + len(ins)
		case listPair, listPairQ:
			q := ""
			if cf.style == listPairQ {
				q = `"`
			}
			ins = append(ins, indent+"- "+q+"--"+f[0]+q)
			line = at + 1 + len(ins)
			if f[1] != "" {
				ins = append(ins, indent+"- "+q+f[1]+q)
			}
		}
	}
	out := append(append(append([]string{}, lines[:at+1]...), ins...), lines[at+1:]...)
	return strings.Join(out, "\n"), line
}

// corpusLint builds a bundle of the sample model (4 attention heads, 2 key-value heads, 2 layers,
// max_position_embeddings 131072 with llama3 rope scaling, bf16, a rank-8 LoRA adapter) and one
// deploy file, and lints it.
func corpusLint(t *testing.T, l *sample.Layout, name, text string, engine bool) []Finding {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "deploy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o := manifest.BuildOptions{ModelDir: l.ModelDir, DeployPaths: []string{dir}}
	if engine {
		o.EngineFile = l.EngineFile
	}
	m, err := manifest.Build(ctx, o)
	if err != nil {
		t.Fatalf("build manifest with %s: %v", name, err)
	}
	return Run(ctx, m, DirSource{Model: l.ModelDir}, nil).Findings
}

func corpusErrors(fs []Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Severity == Error {
			out = append(out, f)
		}
	}
	return out
}

func readCorpus(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "corpus", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestCorpusClean(t *testing.T) {
	l := etGen(t, sample.Options{})
	for _, cf := range corpusFiles {
		t.Run(cf.name, func(t *testing.T) {
			fs := corpusLint(t, l, cf.name, readCorpus(t, cf.name), false)
			if errs := corpusErrors(fs); len(errs) > 0 {
				t.Errorf("%s as written: want no error, got:%s", cf.name, etDump(errs))
			}
		})
	}
}

// TestCorpusLiteralToken: the vLLM docs' LWS page writes the Hub token as a literal env value
// (its placeholder <your-hf-token>, where a user puts the token); as published, that shape is
// refused by manifest build, naming the file and each line. The corpus file references a Secret.
func TestCorpusLiteralToken(t *testing.T) {
	l := etGen(t, sample.Options{})
	orig := readCorpus(t, "lws-vllm.yaml")
	ref := "valueFrom:\n                  secretKeyRef:\n                    name: hf-token\n                    key: token"
	text := strings.ReplaceAll(orig, ref, "value: <your-hf-token>")
	if strings.Count(text, "<your-hf-token>") != 2 {
		t.Fatal("edit did not apply")
	}
	var lines []int
	for i, s := range strings.Split(text, "\n") {
		if strings.Contains(s, "<your-hf-token>") {
			lines = append(lines, i+1)
		}
	}
	dir := filepath.Join(t.TempDir(), "deploy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lws-vllm.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: l.ModelDir, DeployPaths: []string{dir}})
	if err == nil {
		t.Fatal("build with the page's literal token: want a refusal")
	}
	for _, n := range lines {
		if want := fmt.Sprintf("lws-vllm.yaml:%d:", n); !strings.Contains(err.Error(), want) {
			t.Errorf("refusal does not name %s:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "<your-hf-token>") {
		t.Errorf("refusal prints the value:\n%v", err)
	}
}

// TestCorpusEdits: the one-line edits, each of which makes vLLM refuse to start.
func TestCorpusEdits(t *testing.T) {
	l := etGen(t, sample.Options{})
	edits := []struct {
		name  string
		flags [][2]string
		rule  string
		quote string // part of the message
	}{
		{"tensor parallel 8 on 4 heads", [][2]string{{"tensor-parallel-size", "8"}}, "tensor-parallel", "Total number of attention heads (4) must be divisible by tensor parallel size (8)."},
		{"max-model-len past 131072", [][2]string{{"max-model-len", "262144"}}, "context-length", "max-model-len 262144 exceeds the 131072 tokens"},
		{"awq on a bf16 checkpoint", [][2]string{{"quantization", "awq"}}, "quant-config-mismatch", "quantization awq needs a awq checkpoint"},
		{"max-lora-rank 4 under an r=8 adapter", [][2]string{{"enable-lora", ""}, {"max-lora-rank", "4"}}, "lora-rank", "r = 8 exceeds max-lora-rank 4"},
	}
	for _, cf := range corpusFiles {
		if cf.anchor == "" {
			continue
		}
		for _, e := range edits {
			t.Run(cf.name+"/"+e.name, func(t *testing.T) {
				text, line := cf.addFlags(t, readCorpus(t, cf.name), e.flags...)
				fs := corpusLint(t, l, cf.name, text, false)
				where := fmt.Sprintf("deploy/%s:%d", cf.name, line)
				for _, f := range corpusErrors(fs) {
					if f.Rule == e.rule && strings.Contains(f.Message, where) && strings.Contains(f.Message, e.quote) {
						return
					}
				}
				t.Errorf("want error %s naming %s and %q; got:%s", e.rule, where, e.quote, etDump(fs))
			})
		}
	}
}

// TestCorpusModelEnv: --model=$(MODEL_ID) whose env value is not mounted, a Hub id, or a Secret.
func TestCorpusModelEnv(t *testing.T) {
	l := etGen(t, sample.Options{})
	for _, cf := range corpusFiles {
		if !cf.modelEnv {
			continue
		}
		orig := readCorpus(t, cf.name)
		modelLine := 0
		for i, s := range strings.Split(orig, "\n") {
			if strings.Contains(s, "--model=$(MODEL_ID)") {
				modelLine = i + 1
			}
		}
		cases := []struct {
			name, value, rule, sev, want string
		}{
			{"not mounted", "value: /models/other", "deploy-model-mount", "error", fmt.Sprintf("model /models/other (--model, deploy/%s:%d)", cf.name, modelLine)},
			{"hub id", "value: google/gemma-3-1b-it", "replica-mismatch", "error", fmt.Sprintf("deploy/%s:%d: Deployment vllm-gemma-deployment container inference-server loads google/gemma-3-1b-it, a Hugging Face Hub id", cf.name, modelLine)},
			{"from a secret", "valueFrom: {secretKeyRef: {name: model, key: id}}", "replica-mismatch", "warning", "set from secretKeyRef model/id (valueFrom)"},
		}
		for _, tc := range cases {
			t.Run(cf.name+"/"+tc.name, func(t *testing.T) {
				text := strings.Replace(orig, "value: /models/llama", tc.value, 1)
				if text == orig {
					t.Fatal("edit did not apply")
				}
				fs := corpusLint(t, l, cf.name, text, false)
				for _, f := range fs {
					if f.Rule == tc.rule && string(f.Severity) == tc.sev && strings.Contains(f.Message, tc.want) {
						return
					}
				}
				t.Errorf("want %s %s containing %q; got:%s", tc.sev, tc.rule, tc.want, etDump(fs))
			})
		}
	}
}

// TestEngineConfigAndDeploy: the sample bundle (engine.yaml read with --config) and edits that
// make the engine config and the deployment disagree.
func TestEngineConfigAndDeploy(t *testing.T) {
	const args = `args: ["--config", "/etc/vllm/engine.yaml"]`
	for _, tc := range []struct {
		name     string
		deploy   string // replacement of the args line ("" keeps it)
		engine   [2]string
		rule     string
		sev      Severity
		path     string
		contains string
	}{
		{name: "flag overrides the engine config", deploy: `args: ["--config", "/etc/vllm/engine.yaml", "--max-model-len", "16384"]`,
			rule: "replica-mismatch", sev: Warning, path: "deploy/deployment.yaml",
			contains: "sets --max-model-len 16384, and the engine config it reads sets max-model-len 8192 (engine/engine.yaml:5): the replica runs 16384"},
		{name: "never reads the engine config", deploy: `args: ["--model", "/models/Llama-3.1-8B-Instruct-demo"]`,
			rule: "replica-mismatch", sev: Error, path: "deploy/deployment.yaml",
			contains: "never reads the bundle's engine config engine/engine.yaml (no --config)"},
		{name: "reads another config file", deploy: `args: ["--config", "/etc/vllm/other.yaml"]`,
			rule: "replica-mismatch", sev: Warning, path: "deploy/deployment.yaml",
			contains: "reads --config /etc/vllm/other.yaml (deploy/deployment.yaml:26), not the bundle's engine config engine/engine.yaml"},
		{name: "tensor parallel in engine.yaml", engine: [2]string{"tensor-parallel-size: 1", "tensor-parallel-size: 8"},
			rule: "tensor-parallel", sev: Error, path: "engine/engine.yaml",
			contains: "engine/engine.yaml:7: tensor-parallel-size 8 does not divide the model's 4 attention heads"},
		{name: "tensor parallel over key-value heads", engine: [2]string{"tensor-parallel-size: 1", "tensor-parallel-size: 3"},
			rule: "tensor-parallel", sev: Error, path: "engine/engine.yaml",
			contains: "Total number of attention heads (4) must be divisible by tensor parallel size (3)."},
		{name: "more ranks than GPUs", engine: [2]string{"tensor-parallel-size: 1", "tensor-parallel-size: 2"},
			rule: "gpu-count", sev: Error, path: "deploy/deployment.yaml",
			contains: "requests 1 accelerator(s) (nvidia.com/gpu) but runs tensor-parallel-size 2 × pipeline-parallel-size 1 = 2 ranks (engine/engine.yaml:7)"},
		{name: "pipeline past the layers", engine: [2]string{"tensor-parallel-size: 1", "pipeline-parallel-size: 4"},
			rule: "pipeline-parallel", sev: Error, path: "engine/engine.yaml",
			contains: "pipeline-parallel-size 4 is more than the model's 2 hidden layers"},
		{name: "served name differs", deploy: `args: ["--config", "/etc/vllm/engine.yaml", "--served-model-name", "other"]`,
			rule: "served-model-name", sev: Error, path: "deploy/deployment.yaml",
			contains: "serves the model as other, but the engine config names it llama-demo (engine/engine.yaml:3)"},
		{name: "unknown flag on the command line", deploy: `args: ["--config", "/etc/vllm/engine.yaml", "--max-modle-len", "4096"]`,
			rule: "engine-config-invalid", sev: Error, path: "deploy/deployment.yaml",
			contains: "--max-modle-len is not a vllm serve flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := etGen(t, sample.Options{})
			if tc.deploy != "" {
				etEdit(t, l, "deploy/deployment.yaml", func(s string) string { return strings.Replace(s, args, tc.deploy, 1) })
			}
			if tc.engine[0] != "" {
				etEdit(t, l, "engine/engine.yaml", func(s string) string { return strings.Replace(s, tc.engine[0], tc.engine[1], 1) })
			}
			fs := etLint(t, l, etBuild{})
			for _, f := range fs {
				if f.Rule == tc.rule && f.Severity == tc.sev && f.Path == tc.path && strings.Contains(f.Message, tc.contains) {
					return
				}
			}
			t.Errorf("want %s %s at %s containing %q; got:%s", tc.sev, tc.rule, tc.path, tc.contains, etDump(fs))
		})
	}
	t.Run("sample is clean", func(t *testing.T) {
		l := etGen(t, sample.Options{})
		for _, f := range etLint(t, l, etBuild{}) {
			if f.Severity == Error || f.Rule == "replica-mismatch" || f.Rule == "served-model-name" || f.Rule == "gpu-count" {
				t.Errorf("sample: %s %s: %s", f.Severity, f.Rule, f.Message)
			}
		}
	})
}
