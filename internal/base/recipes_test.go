package base

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// recipesDoc is the file whose Recipes section says which files to touch for a recurring change.
const recipesDoc = "docs/development.md"

// codeSpan is a backticked span of Markdown.
var codeSpan = regexp.MustCompile("`([^`\n]+)`")

// recipeProblems lists the paths the "## Recipes" section of doc names that do not exist under
// root, one line each. A path is a code span with a slash and no space (`manifest/lint/`,
// `manifest/lint/model_*.go`: a * matches as in a glob); commands (`go test ./x`) have spaces and
// are not checked. A doc without the section is a problem too: the check would pass vacuously.
func recipeProblems(root, doc string) []string {
	_, section, ok := strings.Cut(doc, "\n## Recipes\n")
	if !ok {
		return []string{recipesDoc + " has no \"## Recipes\" section"}
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var out []string
	paths := 0
	for _, m := range codeSpan.FindAllStringSubmatch(section, -1) {
		p := m[1]
		if !strings.Contains(p, "/") || strings.ContainsAny(p, " \t") {
			continue
		}
		paths++
		if found, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(p))); len(found) == 0 {
			out = append(out, recipesDoc+": the Recipes section names "+p+", which does not exist")
		}
	}
	if paths == 0 {
		out = append(out, recipesDoc+": the Recipes section names no path")
	}
	return out
}

// TestRecipesNameRealPaths fails when a recipe in docs/development.md names a file or folder that
// is not in the tree: a recipe that sends a newcomer to a renamed file is worse than none.
func TestRecipesNameRealPaths(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, recipesDoc))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range recipeProblems(root, string(doc)) {
		t.Error(p)
	}
}

// TestRecipesNameRealPathsCatches proves recipeProblems finds a missing path, a missing glob and a
// missing section, and leaves commands and other sections alone.
func TestRecipesNameRealPathsCatches(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "pkg", "rules_a.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, doc, want string // want: substring of the one problem; "" for none
	}{
		{"good", "# D\n\n## Recipes\n\nEdit `pkg/`, `pkg/rules_a.go`, `pkg/rules_*.go`; run `go test ./nowhere`.\n", ""},
		{"other section", "# D\n\n## Recipes\n\n`pkg/rules_a.go`\n\n## Later\n\n`gone/file.go`\n", ""},
		{"missing file", "# D\n\n## Recipes\n\n`pkg/rules_a.go` and `pkg/bogus.go`\n", "names pkg/bogus.go"},
		{"missing glob", "# D\n\n## Recipes\n\n`pkg/model_*.go`\n", "names pkg/model_*.go"},
		{"no section", "# D\n\n## Layout\n\n`pkg/`\n", "no \"## Recipes\" section"},
		{"no path", "# D\n\n## Recipes\n\nRun `make test`.\n", "names no path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantOne(t, "problem", recipeProblems(root, tc.doc), tc.want)
		})
	}
}
