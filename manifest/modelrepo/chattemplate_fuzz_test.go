package modelrepo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzJinjaSyntax checks the jinja2-grammar checker never panics and that its errors carry a
// position inside the template.
func FuzzJinjaSyntax(f *testing.F) {
	files, _ := filepath.Glob("testdata/chat_templates/*.jinja")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("{% for x in y %}{{ x | f(1, k=2) if x else (a, b)[0] }}{% endfor %}")
	f.Add("{% raw %}{{{% endraw %}{# c #}{%- set ns.a = [1, {'k': 2}] -%}")
	f.Fuzz(func(t *testing.T, src string) {
		err := CheckJinjaSyntax(src, "t.jinja")
		if err == nil {
			return
		}
		var se *JinjaSyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("not a syntax error: %v", err)
		}
		lines := 1
		for i := 0; i < len(src); i++ {
			if src[i] == '\n' {
				lines++
			}
		}
		if se.Line < 1 || se.Line > lines || se.Col < 1 {
			t.Fatalf("position %d:%d outside the %d-line template: %v", se.Line, se.Col, lines, err)
		}
	})
}
