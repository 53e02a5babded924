package jinja

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzRender: any template text parses or fails cleanly, and renders within its budgets without
// a panic (Parse and Render turn panics into "failed" errors, which the fuzzer reports as bugs).
// Seeds: testdata/fuzz/FuzzRender and the fixture templates.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		`{{ (a if c else b) }}`, `{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}`, `{{ "a" * 3000000000 }}`,
		`{% for m in messages %}{{ m.role }}{% endfor %}`, `{%- set ns = namespace(x=1) -%}{{ ns.x }}`,
		`{{ messages[::-1] | tojson(indent=2) }}`, `{% raw %}{{{% endraw %}`, `{{ 'é'[0] ~ "\u00e9" }}`,
	} {
		f.Add(s)
	}
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "*.jinja"))
	for _, p := range fixtures {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(string(data))
		}
	}
	vars := map[string]any{
		"messages":              []any{map[string]any{"role": "user", "content": "hi"}, map[string]any{"role": "assistant", "content": "yo"}},
		"add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
	}
	f.Fuzz(func(t *testing.T, src string) {
		tpl, err := Parse(src)
		if err != nil {
			if strings.HasPrefix(err.Error(), "template parser failed") {
				t.Fatalf("parser panicked: %v", err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		out, err := tpl.Render(ctx, vars, time.Unix(0, 0), Limits{MaxSteps: 100_000, MaxOutput: 1 << 16, MaxDepth: 50})
		if err != nil && strings.HasPrefix(err.Error(), "template renderer failed") {
			t.Fatalf("renderer panicked: %v", err)
		}
		if len(out) > 1<<16 {
			t.Fatalf("output of %d bytes beyond the budget", len(out))
		}
	})
}

// FuzzParse: the one parser never panics, from either entry point, and every error it returns is
// a *SyntaxError with a position inside the template (line 1 column 1 at the least). Seeds:
// testdata/fuzz/FuzzParse, the fixture templates and the real ones under ../testdata.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"{% for x in y %}{{ x | f(1, k=2) if x else (a, b)[0] }}{% endfor %}",
		"{% raw %}{{{% endraw %}{# c #}{%- set ns.a = [1, {'k': 2}] -%}",
		"{% if a %}\n{% for b in c recursive %}{{ loop(b) }}{% else %}{% break %}{% endfor %}",
		`{{ "\x4" ~ 0x_1 ~ 1e5 ~ a.0.1 }}{% call(u) m() %}{% endcall %}{{ m[1:2:3:4] }}`,
	} {
		f.Add(s)
	}
	for _, glob := range []string{filepath.Join("testdata", "*.jinja"), filepath.Join("..", "testdata", "chat_templates", "*.jinja")} {
		files, _ := filepath.Glob(glob)
		for _, p := range files {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(string(data))
			}
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		lines := strings.Count(src, "\n") + 1
		check := Check(src, "t.jinja")
		_, parse := ParseNamed(src, "t.jinja")
		for entry, err := range map[string]error{"Check": check, "ParseNamed": parse} {
			if err == nil {
				continue
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("%s: not a *SyntaxError (a parser panic?): %v", entry, err)
			}
			if se.Line < 1 || se.Line > lines || se.Col < 1 || se.Name != "t.jinja" {
				t.Fatalf("%s: position %d:%d outside the %d-line template: %v", entry, se.Line, se.Col, lines, err)
			}
		}
		if check != nil && (parse == nil || parse.Error() != check.Error()) {
			t.Fatalf("Check and ParseNamed disagree: %v vs %v", check, parse)
		}
		if check == nil && parse != nil && !errors.Is(parse, ErrUnsupported) {
			t.Fatalf("Check accepts what ParseNamed rejects as a syntax error: %v", parse)
		}
	})
}
