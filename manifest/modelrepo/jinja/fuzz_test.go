package jinja

import (
	"context"
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
