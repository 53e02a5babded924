package yamlnode

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestCheckerReportsEveryProblemWithLineAndField(t *testing.T) {
	c := &Checker{Name: "drill.yaml"}
	root := c.Root([]byte("name: x\nsteps: 3\nretries: many\nwait: 5\nextra: 1\n"), "a drill file")
	if root == nil {
		t.Fatal(c.Problems)
	}
	var steps, retries int
	c.Mapping(root, "", true, Fields{
		"name":    func(n *yaml.Node, at string) { c.Str(n, at, true) },
		"steps":   func(n *yaml.Node, at string) { steps = c.IntIn(n, at, 1, 2) },
		"retries": func(n *yaml.Node, at string) { retries = c.IntIn(n, at, 0, 9) },
		"wait":    func(n *yaml.Node, at string) { c.Duration(n, at) },
	})
	want := []string{
		"drill.yaml:2: steps: want a whole number from 1 to 2, got 3",
		`drill.yaml:3: retries: want a whole number, got "many"`,
		"drill.yaml:4: wait: want a positive duration",
		"drill.yaml:5: extra: unknown key (want one of name, retries, steps, wait)",
	}
	got := strings.Join(c.Problems, "\n")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("problems lack %q:\n%s", w, got)
		}
	}
	if steps != 0 || retries != 0 {
		t.Error("bad values decoded")
	}
	for _, bad := range []struct{ doc, want string }{
		{"", "drill.yaml: empty file"},
		{"a: [\n", "drill.yaml:"},
		{"a: &x 1\nb: *x\n", "anchors and aliases are not supported in a drill file"},
		{"a: 1\n---\nb: 2\n", "a drill file holds one YAML document"},
	} {
		c := &Checker{Name: "drill.yaml"}
		if c.Root([]byte(bad.doc), "a drill file") != nil || !strings.Contains(strings.Join(c.Problems, "\n"), bad.want) {
			t.Errorf("%q: %v, want %q", bad.doc, c.Problems, bad.want)
		}
	}
}
