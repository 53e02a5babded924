package modelrepo

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func addFileSeed(f *testing.F, name string) {
	if data, err := os.ReadFile(name); err == nil {
		f.Add(data)
	}
}

// FuzzEngineConfig: never panics; a config comes back exactly when the error is nil or an
// *EngineConfigError; every problem names the file and a line; fatal errors name the file.
func FuzzEngineConfig(f *testing.F) {
	addFileSeed(f, "testdata/engine/full.yaml")
	for _, s := range []string{
		"", "model: /m\n", "- a\n", "a: &a [*a]\n", "<<: *x\n", "<<: [{a: 1}, 3]\n",
		"max-model-len: 32k\nmax_model_len: 1\n", "lora-modules:\n  - {name: a}\n  - 'a=b=c'\n  - '{\"name\":1}'\n",
		"hf-overrides: {a: &x [*x]}\n", "hf-overrides: '{\"a\": 1e400}'\n", "? [a]\n: b\n", "port: 0x\n",
		"max-model-len: 9999999999999999999999K\n", "tp: 2\n--port: 1\n1: 2\n", "model: !!binary aGVsbG8=\n",
		"enable-lora: !!str true\n", "x: \"\\u0000\"\n", "---\n---\n", "a: 1\n...\n", "%YAML 1.1\n---\nmodel: m\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseEngineConfig(data, "engine/engine.yaml")
		var ece *EngineConfigError
		switch {
		case err == nil:
			if c == nil {
				t.Fatal("nil config without error")
			}
		case errors.As(err, &ece):
			if c == nil || len(ece.Problems) == 0 {
				t.Fatalf("config error without config or problems: %v", err)
			}
			for _, p := range ece.Problems {
				if p.Line < 1 || !strings.HasPrefix(p.Format("engine/engine.yaml"), "engine/engine.yaml:") {
					t.Fatalf("problem without file: %v", p)
				}
			}
		default:
			if c != nil {
				t.Fatalf("fatal error with a config: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "engine/engine.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
		}
		if c != nil && (c.MaxLoRARank == 0 && !c.Has("max-lora-rank")) {
			t.Fatal("default max-lora-rank lost")
		}
	})
}

// FuzzAdapterConfig: never panics; errors name the file; a config comes back for every object.
func FuzzAdapterConfig(f *testing.F) {
	addFileSeed(f, "testdata/lora/adapter_config.json")
	for _, s := range []string{
		`{}`, `[]`, `null`, `{"r": 1e400}`, `{"r": -1, "lora_alpha": "x", "target_modules": [null]}`,
		`{"r": 8, "lora_alpha": 8, "target_modules": "q", "modules_to_save": "lm_head", "use_dora": true}`,
		`{"r": 9223372036854775808}`, `{"lora_alpha": 1e309}`, `{"a":1}{"b":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseAdapterConfig(data, "a/adapter_config.json")
		if err != nil && !strings.HasPrefix(err.Error(), "a/adapter_config.json: ") {
			t.Fatalf("error does not name the file: %v", err)
		}
		var ae *AdapterConfigError
		if errors.As(err, &ae) != (a != nil && err != nil) {
			t.Fatalf("config %v with error %v", a != nil, err)
		}
		if a != nil && a.R < 0 {
			t.Fatalf("negative rank %d", a.R)
		}
	})
}

// FuzzKubernetesYAML: never panics; errors name the file; every container belongs to a pod spec.
func FuzzKubernetesYAML(f *testing.F) {
	addFileSeed(f, "testdata/deploy/deployment.yaml")
	addFileSeed(f, "testdata/deploy/Dockerfile")
	for _, s := range []string{
		"", "---\n", "apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: List, items: [*a]}]\n",
		"apiVersion: v1\nkind: Pod\nspec: &s {containers: [{image: a, args: [*s]}]}\n",
		"a: &a [*a, *a]\nkind: x\napiVersion: y\nspec: *a\n", "kind: Pod\n", "apiVersion: v1\nkind: Pod\nspec:\n  containers: [[]]\n",
		"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - volumeMounts: [{mountPath: [x]}]\n",
		"FROM a\nFROM\n", "FROM --platform=x a AS b\nFROM b\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := ParseKubernetesYAML(data, "deploy/d.yaml")
		if err != nil {
			if objs != nil || !strings.HasPrefix(err.Error(), "deploy/d.yaml") {
				t.Fatalf("bad error: %v (objects %d)", err, len(objs))
			}
		}
		for _, o := range objs {
			if o.Kind == "" || o.APIVersion == "" {
				t.Fatalf("object without kind or apiVersion: %+v", o)
			}
			for _, c := range o.Containers() {
				_ = ImagePinned(c.Image)
				_ = ParseServeCommand(c.Image, c.Command, c.Args)
			}
		}
		froms, err := ParseDockerfile(data, "deploy/Dockerfile")
		if err != nil && (froms != nil || !strings.HasPrefix(err.Error(), "deploy/Dockerfile")) {
			t.Fatalf("bad Dockerfile error: %v", err)
		}
		for _, fr := range froms {
			if fr.Image == "" || fr.Line < 1 {
				t.Fatalf("bad FROM %+v", fr)
			}
		}
	})
}
