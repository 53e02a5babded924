package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"lifeboat/internal/sample"
)

// TestLintDeployFlagsThroughCLI: manifest build + manifest lint on a bundle whose deployment sets
// vLLM by command-line flags (the kubernetes/examples shape from manifest/lint/testdata/corpus):
// clean as written, exit 1 naming the deploy file and line once --tensor-parallel-size exceeds
// what the model's attention heads allow.
func TestLintDeployFlagsThroughCLI(t *testing.T) {
	l, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(filepath.Join("..", "..", "manifest", "lint", "testdata", "corpus", "kubernetes-examples-vllm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lint := func(text string) (result, string) {
		dir := filepath.Join(t.TempDir(), "deploy")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "vllm.yaml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		m := filepath.Join(t.TempDir(), "manifest.json")
		if r := lifeboat(t, "manifest", "build", "--model", l.ModelDir, "--deploy", dir, "--out", m); r.code != 0 {
			t.Fatalf("build exit %d: %s", r.code, r.stderr)
		}
		r := lifeboat(t, "manifest", "lint", m, "--model", l.ModelDir, "-o", "json")
		return r, r.stdout
	}
	r, out := lint(string(orig))
	if r.code != 0 {
		t.Fatalf("clean corpus manifest: exit %d, want 0\n%s%s", r.code, out, r.stderr)
	}
	edited := strings.Replace(string(orig), "- --tensor-parallel-size=1", "- --tensor-parallel-size=8", 1)
	line := 0
	for i, s := range strings.Split(edited, "\n") {
		if strings.Contains(s, "--tensor-parallel-size=8") {
			line = i + 1
		}
	}
	r, out = lint(edited)
	if r.code != 1 {
		t.Fatalf("tensor-parallel-size 8: exit %d, want 1\n%s", r.code, out)
	}
	var rep struct {
		Findings []struct{ Rule, Severity, Path, Message string } `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	want := "deploy/vllm.yaml:" + strconv.Itoa(line) + ": tensor-parallel-size 8 does not divide the model's 4 attention heads"
	for _, f := range rep.Findings {
		if f.Rule == "tensor-parallel" && f.Severity == "error" && f.Path == "deploy/vllm.yaml" && strings.HasPrefix(f.Message, want) &&
			strings.Contains(f.Message, "Total number of attention heads (4) must be divisible by tensor parallel size (8).") {
			return
		}
	}
	t.Fatalf("no tensor-parallel error starting %q in:\n%s", want, out)
}
