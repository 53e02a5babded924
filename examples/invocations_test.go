//go:build integration

package examples

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"lifeboat/internal/testbed"
)

// scriptKeys hold shell: a GitHub step's run, a GitLab job's scripts.
var scriptKeys = map[string]bool{"run": true, "script": true, "before_script": true, "after_script": true}

// scripts returns every shell script of a CI file (each `run:`, each line of a GitLab script).
func scripts(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var out []string
	var walk func(v any, script bool)
	walk = func(v any, script bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				walk(c, scriptKeys[k])
			}
		case []any:
			for _, c := range x {
				walk(c, script)
			}
		case string:
			if script {
				out = append(out, x)
			}
		}
	}
	walk(doc, false)
	return out
}

// lifeboatCall is a lifeboat command in a shell line: at the start of a command (line start,
// after ; & | ( or then/do), up to the end of that command (an operator or a redirection).
var lifeboatCall = regexp.MustCompile(`(?:^|[;&|(]|\bthen|\bdo)\s*lifeboat((?:\s+[^;&|<>\s]+)*)`)

// shellWords splits s as the shell would for these scripts: blanks separate words, quotes
// group them and are dropped ("$FLEET" stays as the word $FLEET: a placeholder value).
func shellWords(s string) []string {
	var out []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, w.String())
	}
	return out
}

// Every lifeboat command the CI templates write down is a command of the binary these sources
// build, with flags it takes, checked on its own (the run tests execute the jobs too, but a
// step whose failure a job tolerates, such as `if: failure()` clean-up, would hide it there).
func TestCITemplatesCallRealCommands(t *testing.T) {
	for _, c := range []struct {
		file string
		want []string // command lines the file must contain: a walk that finds nothing proves nothing
	}{
		{githubWorkflow, []string{"version", "check --fleet $FLEET -o junit", "drill run $DRILL --approve-all --report drill-report -o junit", "drill history --fleet $FLEET", "drill cleanup $DRILL"}},
		{gitlabCI, []string{"version", "check --fleet $FLEET -o junit", "drill run $DRILL --approve-all --report drill-report -o junit", "drill history --fleet $FLEET", "drill cleanup $DRILL"}},
	} {
		seen := map[string]bool{}
		for _, sh := range scripts(t, c.file) {
			for _, line := range strings.Split(sh, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "#") {
					continue
				}
				for _, m := range lifeboatCall.FindAllStringSubmatch(line, -1) {
					args := shellWords(m[1])
					seen[strings.Join(args, " ")] = true
					if p := testbed.InvocationProblem(t, args); p != "" {
						t.Errorf("%s: lifeboat%s: %s", c.file, m[1], p)
					}
				}
			}
		}
		for _, w := range c.want {
			if !seen[w] {
				t.Errorf("%s: no `lifeboat %s` found (found: %v)", c.file, w, seen)
			}
		}
	}
}
