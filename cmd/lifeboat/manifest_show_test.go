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

// manifest diff shows what changed inside the model's configs (embedded in the manifest): in text
// and in JSON, and says so when the old manifest predates the embedding.
func TestDiffShowsModelConfigSettings(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	cfgPath := filepath.Join(l.ModelDir, "config.json")
	cfg, _ := os.ReadFile(cfgPath)
	var doc map[string]any
	if err := json.Unmarshal(cfg, &doc); err != nil {
		t.Fatal(err)
	}
	doc["vocab_size"] = 500
	delete(doc, "rope_scaling")
	out, _ := json.Marshal(doc)
	os.WriteFile(cfgPath, out, 0o644)
	os.WriteFile(filepath.Join(l.ModelDir, "generation_config.json"), []byte(`{"eos_token_id": 449}`), 0o644)
	m2 := filepath.Join(t.TempDir(), "m2.json")
	if r := cli(t, nil, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", m2); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := cli(t, nil, "manifest", "diff", m, m2)
	for _, want := range []string{
		"~ model/config.json",
		"    vocab_size: 512 → 500\n",
		"    rope_scaling: {factor: 8.0, high_freq_factor: 4.0, low_freq_factor: 1.0, original_max_position_embeddings: 8192, rope_type: llama3} → (removed)\n",
		"    eos_token_id: [449, 452, 453] → 449\n",
		"    do_sample: true → (removed)\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("diff text lacks %q:\n%s", want, r.stdout)
		}
	}
	r = cli(t, nil, "manifest", "diff", m, m2, "-o", "json")
	var d struct {
		Changes []struct {
			Path     string `json:"path"`
			Settings []struct {
				Key, Kind, Old, New string
			} `json:"settings"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range d.Changes {
		for _, s := range c.Settings {
			found = found || c.Path == "model/config.json" && s.Key == "rope_scaling" && s.Kind == "removed" && strings.HasPrefix(s.Old, "{factor: 8.0")
		}
	}
	if !found {
		t.Errorf("diff json lacks the dropped rope_scaling:\n%s", r.stdout)
	}

	// The manifest as a Lifeboat that did not embed model configs wrote it.
	raw, _ := os.ReadFile(m)
	var mdoc map[string]any
	if err := json.Unmarshal(raw, &mdoc); err != nil {
		t.Fatal(err)
	}
	for _, l := range mdoc["layers"].([]any) {
		lm := l.(map[string]any)
		if lm["annotations"].(map[string]any)["dev.lifeboat.part"] == "model" {
			delete(lm, "data")
		}
	}
	oldM := filepath.Join(t.TempDir(), "old.json")
	raw, _ = json.Marshal(mdoc)
	os.WriteFile(oldM, raw, 0o644)
	r = cli(t, nil, "manifest", "diff", oldM, m2)
	if r.code != 0 || !strings.Contains(r.stdout, "    (model config not embedded in OLD; rebuild it to see settings)\n") || strings.Contains(r.stdout, "vocab_size") {
		t.Errorf("diff of an old manifest: exit %d\n%s", r.code, r.stdout)
	}
}
