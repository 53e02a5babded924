package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// cliDocsDir is the generated CLI reference, one Markdown file per command.
var cliDocsDir = filepath.Join(repoRoot, "docs", "cli")

// genCLIDocs writes the CLI reference of the whole command tree into dir, as cobra's doc
// generator renders it from each command's Use, Short, Long, Example and flags — the same text
// `--help` prints. No auto-generated date line, so the output depends only on the commands.
func genCLIDocs(t *testing.T, dir string) {
	t.Helper()
	// Flag defaults that depend on the machine or the environment must not leak into the
	// reference: generate as for a clean environment.
	for _, k := range []string{"LIFEBOAT_FLEET", "KUBECONFIG", "DOCKER_CONFIG"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	root := (&app{}).rootCmd()
	root.InitDefaultCompletionCmd()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		t.Fatal(err)
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// docs/cli is what the commands say about themselves today: regenerated into a temp dir, it is
// identical file for file. A new flag, command or help text changes it; `make docs` (which runs
// this test with LIFEBOAT_WRITE_DOCS=1) writes it anew.
func TestCLIReferenceIsCurrent(t *testing.T) {
	if os.Getenv("LIFEBOAT_WRITE_DOCS") == "1" {
		if err := os.RemoveAll(cliDocsDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(cliDocsDir, 0o755); err != nil {
			t.Fatal(err)
		}
		genCLIDocs(t, cliDocsDir)
		t.Logf("wrote %s", cliDocsDir)
		return
	}
	tmp := t.TempDir()
	genCLIDocs(t, tmp)
	want, have := readTree(t, tmp), readTree(t, cliDocsDir)
	var stale []string
	for name, b := range want {
		if old, ok := have[name]; !ok {
			stale = append(stale, name+" (missing)")
		} else if !bytes.Equal(old, b) {
			stale = append(stale, name+" (differs)")
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			stale = append(stale, name+" (no such command any more)")
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Fatalf("docs/cli is stale — the commands' help changed. Run `make docs` and commit docs/cli.\n  %s",
			strings.Join(stale, "\n  "))
	}
	if len(want) < 20 {
		t.Fatalf("only %d command pages generated", len(want))
	}
}
