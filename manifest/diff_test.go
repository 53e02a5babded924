package manifest_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/sample"
	"lifeboat/manifest"
)

// editJSON rewrites a JSON file of the sample through f.
func editJSON(t *testing.T, path string, f func(d map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	var d map[string]any
	must(t, json.Unmarshal(data, &d))
	f(d)
	out, err := json.MarshalIndent(d, "", "  ")
	must(t, err)
	must(t, os.WriteFile(path, out, 0o644))
}

// settingsOf maps a change's settings by key to "old → new", "(absent)" and "(removed)" marking
// the missing side.
func settingsOf(c manifest.Change) map[string]string {
	out := map[string]string{}
	for _, s := range c.Settings {
		out[s.Key] = s.Transition()
	}
	return out
}

// TestDiffModelConfigSettings: the semantic release diff of the model's configs — vocab_size,
// rope_scaling dropped, EOS ids, the chat template inside tokenizer_config.json — from the
// configs the manifest embeds; weights and tokenizer.json are still compared by digest only.
func TestDiffModelConfigSettings(t *testing.T) {
	l := genSample(t, sample.Options{})
	old, _ := build(t, l)
	editJSON(t, filepath.Join(l.ModelDir, "config.json"), func(d map[string]any) {
		d["vocab_size"] = 500
		d["rope_theta"] = 500000 // 500000.0 before: the same number
		d["torch_dtype"] = "float16"
		delete(d, "rope_scaling")
	})
	var tplOld, tplNew string
	editJSON(t, filepath.Join(l.ModelDir, "tokenizer_config.json"), func(d map[string]any) {
		tplOld = d["chat_template"].(string)
		tplNew = strings.Replace(tplOld, "{%", "\n{%", 3) + "\n{# tools #}\n"
		d["chat_template"] = tplNew
	})
	editJSON(t, filepath.Join(l.ModelDir, "generation_config.json"), func(d map[string]any) { d["eos_token_id"] = 449 })
	cur, _ := build(t, l)
	d := manifest.Diff(old, cur)
	byPath := map[string]manifest.Change{}
	for _, c := range d.Changes {
		byPath[c.Path] = c
	}
	want := map[string]map[string]string{
		"model/config.json": {
			"vocab_size":   "512 → 500",
			"torch_dtype":  "bfloat16 → float16",
			"rope_scaling": "{factor: 8.0, high_freq_factor: 4.0, low_freq_factor: 1.0, original_max_position_embeddings: 8192, rope_type: llama3} → (removed)",
		},
		"model/generation_config.json": {"eos_token_id": "[449, 452, 453] → 449"},
		"model/tokenizer_config.json":  {},
	}
	for p, w := range want {
		c, ok := byPath[p]
		if !ok {
			t.Errorf("%s: not in the diff", p)
			continue
		}
		got := settingsOf(c)
		if len(got) != len(w) {
			t.Errorf("%s: settings %v, want %v", p, got, w)
		}
		for k, v := range w {
			if got[k] != v {
				t.Errorf("%s: %s is %q, want %q", p, k, got[k], v)
			}
		}
		if c.Note != "" {
			t.Errorf("%s: note %q", p, c.Note)
		}
	}
	tc := byPath["model/tokenizer_config.json"].ChatTemplates
	if len(tc) != 1 || tc[0].Kind != "changed" || tc[0].Name != "" || tc[0].AddedLines != 5 || tc[0].RemovedLines != 1 ||
		tc[0].OldSHA256 == tc[0].NewSHA256 || len(tc[0].NewSHA256) != 64 {
		t.Errorf("chat template change %+v, want changed +5/-1", tc)
	}
	if len(d.Changes) != 3 {
		t.Errorf("%d changes, want the 3 edited files: %+v", len(d.Changes), d.Changes)
	}
}

// TestDiffChatTemplateFile: a chat_template.jinja that changed shows its digests and line counts.
func TestDiffChatTemplateFile(t *testing.T) {
	l := genSample(t, sample.Options{})
	p := filepath.Join(l.ModelDir, "chat_template.jinja")
	must(t, os.WriteFile(p, []byte("a\nb\nc\nd\n"), 0o644))
	old, _ := build(t, l)
	must(t, os.WriteFile(p, []byte("a\nB\nc\nd\ne\nf\n"), 0o644))
	cur, _ := build(t, l)
	d := manifest.Diff(old, cur)
	if len(d.Changes) != 1 || len(d.Changes[0].ChatTemplates) != 1 {
		t.Fatalf("changes %+v", d.Changes)
	}
	if tc := d.Changes[0].ChatTemplates[0]; tc.AddedLines != 3 || tc.RemovedLines != 1 || tc.Kind != "changed" {
		t.Errorf("chat_template.jinja: %+v, want +3/-1", tc)
	}
}

// TestDiffOldManifestNotEmbedded: a manifest built before model configs were embedded still
// diffs, and says why the settings are not shown.
func TestDiffOldManifestNotEmbedded(t *testing.T) {
	l := genSample(t, sample.Options{})
	old, _ := build(t, l)
	for i, f := range old.Files {
		if f.Part == manifest.PartModel {
			old.Files[i].Data = nil // as an older Lifeboat wrote it
		}
	}
	editJSON(t, filepath.Join(l.ModelDir, "config.json"), func(d map[string]any) { d["vocab_size"] = 500 })
	cur, _ := build(t, l)
	d := manifest.Diff(old, cur)
	if len(d.Changes) != 1 || d.Changes[0].Settings != nil ||
		d.Changes[0].Note != "model config not embedded in OLD; rebuild it to see settings" {
		t.Fatalf("changes %+v", d.Changes)
	}
}

// TestBuildEmbedsOnlyModelConfigs: the small configs are embedded, byte for byte; weights,
// tokenizer.json and configs over the cap are not.
func TestBuildEmbedsOnlyModelConfigs(t *testing.T) {
	l := genSample(t, sample.Options{})
	big := `{"pad": "` + strings.Repeat("x", manifest.ModelConfigEmbedLimit) + `"}`
	must(t, os.WriteFile(filepath.Join(l.ModelDir, "preprocessor_config.json"), []byte(big), 0o644))
	must(t, os.WriteFile(filepath.Join(l.ModelDir, "processor_config.json"), []byte(`{"a": 1}`), 0o644))
	m, _ := build(t, l)
	embedded := map[string]bool{}
	for _, f := range m.PartFiles(manifest.PartModel) {
		if f.Data == nil {
			continue
		}
		embedded[f.Path] = true
		disk, err := os.ReadFile(filepath.Join(l.ModelDir, strings.TrimPrefix(f.Path, "model/")))
		must(t, err)
		if string(disk) != string(f.Data) {
			t.Errorf("%s: embedded bytes are not the file's", f.Path)
		}
	}
	for _, p := range []string{"model/config.json", "model/generation_config.json", "model/tokenizer_config.json",
		"model/special_tokens_map.json", "model/processor_config.json", "model/loras/sql-lora/adapter_config.json"} {
		if !embedded[p] {
			t.Errorf("%s not embedded", p)
		}
	}
	for _, p := range []string{"model/tokenizer.json", "model/model-00001-of-00002.safetensors", "model/model.safetensors.index.json",
		"model/loras/sql-lora/adapter_model.safetensors", "model/README.md", "model/preprocessor_config.json"} {
		if embedded[p] {
			t.Errorf("%s embedded", p)
		}
	}
}

// lineDelta (via a template diff) agrees with a longest-common-subsequence computed by brute
// force, on random small texts.
func TestChatTemplateLineCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := func() []string {
		out := make([]string, r.IntN(12))
		for i := range out {
			out[i] = string(rune('a' + r.IntN(4)))
		}
		return out
	}
	for i := 0; i < 500; i++ {
		a, b := text(), text()
		lcs := make([][]int, len(a)+1)
		for x := range lcs {
			lcs[x] = make([]int, len(b)+1)
		}
		for x := len(a) - 1; x >= 0; x-- {
			for y := len(b) - 1; y >= 0; y-- {
				if a[x] == b[y] {
					lcs[x][y] = lcs[x+1][y+1] + 1
				} else {
					lcs[x][y] = max(lcs[x+1][y], lcs[x][y+1])
				}
			}
		}
		added, removed := manifest.LineDelta(a, b)
		if l := lcs[0][0]; added != len(b)-l || removed != len(a)-l {
			t.Fatalf("%q → %q: +%d/-%d, want +%d/-%d", a, b, added, removed, len(b)-l, len(a)-l)
		}
	}
}

// An embedded file cannot forge output: keys and values with control or format characters are
// shown quoted, escapes and all.
func TestDiffSettingsArePrintable(t *testing.T) {
	l := genSample(t, sample.Options{})
	must(t, os.WriteFile(l.EngineFile, []byte("served-model-name: a\n"), 0o644))
	old, _ := build(t, l)
	must(t, os.WriteFile(l.EngineFile, []byte("served-model-name: \"a\\e[2J\\nOK\"\n\"k\\u202e\": {x: \"\\e]0;t\\a\"}\n"), 0o644))
	cur, _ := build(t, l)
	d := manifest.Diff(old, cur)
	var n int
	for _, c := range d.Changes {
		for _, s := range c.Settings {
			n++
			for _, text := range []string{s.Key, s.Old, s.New} {
				if strings.ContainsAny(text, "\x1b\n\a\u202e") {
					t.Errorf("setting %+v carries a control or format character", s)
				}
			}
		}
	}
	if n != 2 {
		t.Errorf("%d settings, want served-model-name and the new key: %+v", n, d.Changes)
	}
}

// A deployment file that is not YAML of keys (a Dockerfile) shows the lines removed and added,
// in order, at most MaxDiffLines of them.
func TestDiffTextFileLines(t *testing.T) {
	l := genSample(t, sample.Options{})
	p := filepath.Join(l.DeployDir, "Dockerfile")
	orig, err := os.ReadFile(p)
	must(t, err)
	old, _ := build(t, l)
	must(t, os.WriteFile(p, []byte(strings.Replace(string(orig), "EXPOSE 8000", "EXPOSE 8001\nUSER 1000", 1)), 0o644))
	cur, _ := build(t, l)
	d := manifest.Diff(old, cur)
	if len(d.Changes) != 1 || strings.Join(d.Changes[0].Lines, "|") != "- EXPOSE 8000|+ EXPOSE 8001|+ USER 1000" || d.Changes[0].Settings != nil {
		t.Fatalf("changes %+v", d.Changes)
	}
	must(t, os.WriteFile(p, []byte(strings.Repeat("RUN true\n", 100)), 0o644))
	cur, _ = build(t, l)
	lines := manifest.Diff(old, cur).Changes[0].Lines
	if len(lines) != manifest.MaxDiffLines+1 || !strings.HasPrefix(lines[manifest.MaxDiffLines], "(… ") {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}
