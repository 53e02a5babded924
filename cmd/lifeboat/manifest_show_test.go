package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/sample"
)

// manifest show of gpt-oss: MXFP4 parameters counted as values (two per U8 byte of *_blocks,
// *_scales excluded), precision mxfp4 with the BF16 share beside it, in text and JSON.
func TestShowMXFP4(t *testing.T) {
	tok := t.TempDir()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		os.WriteFile(filepath.Join(tok, f), []byte("{}"), 0o644)
	}
	dir := filepath.Join(t.TempDir(), "gptoss")
	if err := sample.FamilyRepo(context.Background(), dir, "gptoss", tok); err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(t.TempDir(), "m.json")
	if r := cli(t, nil, "manifest", "build", "--model", dir, "--out", m); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := cli(t, nil, "manifest", "show", m)
	if r.code != 0 || !strings.Contains(r.stdout, "params 26.0M · precision bf16 (99.2%) + mxfp4 (0.8%) · quantization mxfp4") {
		t.Fatalf("show: exit %d\n%s", r.code, r.stdout)
	}
	r = cli(t, nil, "manifest", "show", m, "-o", "json")
	var s struct {
		Model struct {
			Precision string `json:"precision"`
		} `json:"model"`
		Precisions []struct {
			Precision string  `json:"precision"`
			Params    int64   `json:"params"`
			Share     float64 `json:"share"`
		} `json:"precisions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || s.Model.Precision != "mxfp4" || len(s.Precisions) != 2 ||
		s.Precisions[1].Precision != "mxfp4" || s.Precisions[1].Params != 196608 {
		t.Fatalf("show json: %v %s", err, r.stdout)
	}
}
