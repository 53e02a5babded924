package lint

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"lifeboat/internal/sample"
	"lifeboat/manifest"
)

func TestManifestRules(t *testing.T) {
	cases := []struct {
		name     string
		breakDir func(l *sample.Layout) error
		rule     string
		severity Severity
		path     string
	}{
		{"file missing", func(l *sample.Layout) error { return os.Remove(filepath.Join(l.ModelDir, "tokenizer.json")) },
			"manifest-file-missing", Error, "model/tokenizer.json"},
		{"size changed", func(l *sample.Layout) error {
			return os.WriteFile(filepath.Join(l.ModelDir, "generation_config.json"), []byte(`{}`), 0o644)
		}, "manifest-stale", Error, "model/generation_config.json"},
		{"file not in manifest", func(l *sample.Layout) error {
			return os.WriteFile(filepath.Join(l.ModelDir, "added_tokens.json"), []byte(`{}`), 0o644)
		}, "manifest-stale", Warning, "model/added_tokens.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := sample.Generate(context.Background(), filepath.Join(t.TempDir(), "s"), sample.Options{})
			if err != nil {
				t.Fatal(err)
			}
			m, err := manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: l.ModelDir, EngineFile: l.EngineFile, DeployPaths: []string{l.DeployDir}})
			if err != nil {
				t.Fatal(err)
			}
			clean := Run(context.Background(), m, DirSource{Model: l.ModelDir}, nil)
			for _, f := range clean.Findings {
				if f.Rule == c.rule {
					t.Fatalf("clean repository triggers %s: %+v", c.rule, f)
				}
			}
			if err := c.breakDir(l); err != nil {
				t.Fatal(err)
			}
			rep := Run(context.Background(), m, DirSource{Model: l.ModelDir}, nil)
			for _, f := range rep.Findings {
				if f.Rule == c.rule && f.Severity == c.severity && f.Path == c.path && f.Hint != "" {
					return
				}
			}
			t.Fatalf("want %s %s at %s; got %+v", c.severity, c.rule, c.path, rep.Findings)
		})
	}
}

// A restored bundle (model/, engine/, deploy/ under one directory) lints through --bundle.
func TestDirSourceBundle(t *testing.T) {
	l, err := sample.Generate(context.Background(), filepath.Join(t.TempDir(), "s"), sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: l.ModelDir, EngineFile: l.EngineFile, DeployPaths: []string{l.DeployDir}})
	if err != nil {
		t.Fatal(err)
	}
	rep := Run(context.Background(), m, DirSource{Bundle: l.Root}, nil)
	if rep.Errors != 0 || rep.Warnings != 0 {
		t.Fatalf("bundle lint: %+v", rep.Findings)
	}
	src := DirSource{Bundle: l.Root}
	if _, err := src.Size(context.Background(), "model/../../etc/passwd"); err == nil {
		t.Fatal("a path leaving the bundle was served")
	}
	if n, err := src.Size(context.Background(), "engine/engine.yaml"); err != nil || n == 0 {
		t.Fatalf("engine file from bundle: %d %v", n, err)
	}
}
