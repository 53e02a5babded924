package modelrepo

import (
	"strings"
	"testing"
)

func words(line int, ws ...string) []ArgWord {
	out := make([]ArgWord, len(ws))
	for i, w := range ws {
		out[i] = ArgWord{Text: w, Line: line + i}
	}
	return out
}

func TestParseServeArgsForms(t *testing.T) {
	a := ParseServeArgs(words(10, "/models/m", "--max-num-seq", "1024", "--tensor-parallel-size=4", "--max_num_batched_tokens", "1024",
		"-pp", "2", "--no-enable-prefix-caching", "--served-model-name", "a", "b", "--enable-lora", "--max-model-len", "-1", "-O3"), "deploy/d.yaml")
	cfg := a.EngineConfig(nil, "", true)
	if cfg.Model != "/models/m" || cfg.TensorParallel != 4 || cfg.PipelineParallel != 2 || !cfg.EnableLoRA || !cfg.MaxModelLenAuto {
		t.Errorf("cfg = model %q tp %d pp %d lora %v auto %v", cfg.Model, cfg.TensorParallel, cfg.PipelineParallel, cfg.EnableLoRA, cfg.MaxModelLenAuto)
	}
	if strings.Join(cfg.ServedModelNames, ",") != "a,b" {
		t.Errorf("served names %v", cfg.ServedModelNames)
	}
	if k, _ := cfg.Key("max-num-seqs"); k.Line != 11 || k.File != "deploy/d.yaml" {
		t.Errorf("max-num-seqs key = %+v, want line 11 of deploy/d.yaml", k)
	}
	if k, _ := cfg.Key("tensor-parallel-size"); k.At() != "deploy/d.yaml:13" {
		t.Errorf("tensor-parallel-size at %s", k.At())
	}
	abbrev := 0
	for _, p := range cfg.Problems {
		if p.Kind == ProblemAbbreviation && p.Line == 11 && p.File == "deploy/d.yaml" {
			abbrev++
		} else {
			t.Errorf("unexpected problem %s", p.Format("x"))
		}
	}
	if abbrev != 1 {
		t.Errorf("want one abbreviation warning for --max-num-seq, got %d", abbrev)
	}
}

func TestParseServeArgsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-num", "3"}, "ambiguous option: --max-num could match"},
		{[]string{"--max-modle-len", "3"}, "is not a vllm serve flag"},
		{[]string{"--max-model-len"}, "expected one argument"},
		{[]string{"--enable-lora=true"}, "ignored explicit argument"},
		{[]string{"--served-model-name", "--port", "1"}, "expected at least one argument"},
		{[]string{"--tensor-parallel-size", "two"}, "want an integer"},
		{[]string{"--use-v2-block-manager"}, "was a vllm serve flag but is gone"},
		{[]string{"-zz", "1"}, "is not a vllm serve option"},
	} {
		cfg := ParseServeArgs(words(5, tc.args...), "d.yaml").EngineConfig(nil, "", true)
		found := false
		for _, p := range cfg.Problems {
			if strings.Contains(p.Msg, tc.want) && (p.Line == 5 || p.Line == 6) {
				found = true
			}
		}
		if !found {
			t.Errorf("%v: want a problem on line 5 containing %q, got %+v", tc.args, tc.want, cfg.Problems)
		}
	}
}

func TestServeArgsMergeConfig(t *testing.T) {
	conf := []byte("model: /models/m\nmax-model-len: 4096\nserved-model-name: m\ntensor-parallel-size: 2\n")
	a := ParseServeArgs(words(20, "--config", "/etc/vllm/engine.yaml", "--max-model-len", "8192"), "deploy/d.yaml")
	p, line, unknown := a.ConfigPath()
	if p != "/etc/vllm/engine.yaml" || line != 20 || unknown {
		t.Fatalf("ConfigPath = %q %d %v", p, line, unknown)
	}
	cfg := a.EngineConfig(conf, "engine/engine.yaml", true)
	if cfg.MaxModelLen != 8192 || cfg.TensorParallel != 2 || cfg.Model != "/models/m" {
		t.Errorf("merged: max-model-len %d tp %d model %q", cfg.MaxModelLen, cfg.TensorParallel, cfg.Model)
	}
	if k, _ := cfg.Key("tensor-parallel-size"); k.At() != "engine/engine.yaml:4" {
		t.Errorf("tensor-parallel-size from %s, want engine/engine.yaml:4", k.At())
	}
	if len(cfg.Overrides) != 1 || cfg.Overrides[0].File.At() != "engine/engine.yaml:2" || cfg.Overrides[0].Flag.At() != "deploy/d.yaml:22" || cfg.Overrides[0].Flag.Value != "8192" {
		t.Errorf("overrides = %+v", cfg.Overrides)
	}
}

func TestFindServeCommand(t *testing.T) {
	env := ContainerExec{Env: []EnvEntry{
		{Name: "MODEL_ID", Value: "/models/$(SUB)"}, {Name: "SUB", Value: "late"}, // SUB is defined after: kept as written
		{Name: "TP", Value: "2"}, {Name: "TOKEN", From: "secretKeyRef hf/token"},
	}}
	for _, tc := range []struct {
		name            string
		image           string
		command, args   []string
		entry, model    string
		tp              int
		unknownContains string
	}{
		{"vllm serve", "img", []string{"vllm", "serve", "/m"}, nil, "vllm serve", "/m", 1, ""},
		{"python module", "img", []string{"python3", "-m", "vllm.entrypoints.openai.api_server"}, []string{"--model=$(MODEL_ID)", "--tensor-parallel-size=$(TP)"}, "python3 -m vllm.entrypoints.openai.api_server", "/models/$(SUB)", 2, ""},
		{"sh -c", "img", []string{"/bin/sh", "-c"}, []string{"echo hi; exec vllm serve \"/m\" -tp ${TP} --port 8000 && true"}, "vllm serve", "/m", 2, ""},
		{"bash -ec with default", "img", []string{"bash", "-ec", "VLLM_X=1 vllm serve ${MODEL:-/d} --tensor-parallel-size $TP"}, nil, "vllm serve", "/d", 2, ""},
		{"image entry point", "vllm/vllm-openai:v0.11.0", nil, []string{"--model", "/m", "-tp", "2"}, "the image's entry point (vllm serve)", "/m", 2, ""},
		{"image serve", "vllm/vllm-openai:v0.11.0", nil, []string{"serve", "/m"}, "vllm serve (the image's entry point)", "/m", 1, ""},
		{"secret model", "img", []string{"vllm", "serve", "$(TOKEN)"}, nil, "vllm serve", "", 1, "secretKeyRef hf/token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Container{Image: tc.image, Exec: env}
			c.Exec.Command, c.Exec.Args = words(1, tc.command...), words(1+len(tc.command), tc.args...)
			sc, ok := FindServeCommand(c)
			if !ok || sc.Entry != tc.entry {
				t.Fatalf("FindServeCommand = %+v, %v; want entry %q", sc, ok, tc.entry)
			}
			cfg := ParseServeArgs(sc.Args, "d.yaml").EngineConfig(nil, "", sc.Positional)
			if cfg.Model != tc.model || cfg.TensorParallel != tc.tp {
				t.Errorf("model %q tp %d, want %q %d (problems %+v)", cfg.Model, cfg.TensorParallel, tc.model, tc.tp, cfg.Problems)
			}
			if tc.unknownContains != "" && (len(cfg.Unresolved) == 0 || !strings.Contains(cfg.Unresolved[0].Why, tc.unknownContains)) {
				t.Errorf("unresolved = %+v, want one naming %q", cfg.Unresolved, tc.unknownContains)
			}
		})
	}
	if _, ok := FindServeCommand(Container{Image: "busybox", Exec: ContainerExec{Command: words(1, "sh", "-c", "sleep 10")}}); ok {
		t.Error("sleep found as vLLM")
	}
}

func TestKubeletExpand(t *testing.T) {
	env := ContainerEnv{Vars: map[string]EnvValue{"A": {Value: "x", Known: true}, "S": {Unknown: "set from secretKeyRef s/k (valueFrom)"}}}
	for in, want := range map[string]string{"$(A)": "x", "$$(A)": "$(A)", "$(B)": "$(B)", "a$": "a$", "$(A": "$(A", "$(S)": "$(S)"} {
		if got, _ := env.Expand(in); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
	if _, why := env.Expand("--model=$(S)"); !strings.Contains(why, "secretKeyRef s/k") {
		t.Errorf("unknown reason %q", why)
	}
}
