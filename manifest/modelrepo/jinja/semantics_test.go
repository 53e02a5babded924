package jinja

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func render(t *testing.T, src string, vars map[string]any) (string, error) {
	t.Helper()
	tpl, err := Parse(src)
	if err != nil {
		return "", err
	}
	return tpl.Render(context.Background(), vars, time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), Limits{})
}

// TestPythonSemantics pins jinja2 behaviour where the JavaScript oracle differs or cannot judge.
func TestPythonSemantics(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`{{ none | trim }}`, "None"},
		{`{{ "x" * 3 }}|{{ 2 * "ab" }}|{{ [1] * 2 }}`, "xxx|abab|[1, 1]"},
		{`{{ (1 if false else 2) }}{{ ("a" if true) }}`, "2a"},
		{`{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 7 / 2 }} {{ 2 ** 10 }}`, "3 -4 -2 3.5 1024"},
		{`{{ [1, "a", none, true, 1.5] }} {{ {"k": "it's"} }}`, `[1, 'a', None, True, 1.5] {'k': "it's"}`},
		{`{{ {"b": 1, "a": [1, 2.0]} | tojson }} {{ {"a": 1} | tojson(indent=2) }}`, "{\"b\": 1, \"a\": [1, 2.0]} {\n  \"a\": 1\n}"},
		{`{% for x in [1, 2, 3] %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}{% if x == 3 %}{% break %}{% endif %}{% endfor %}`, "13"},
		{`{% for k, v in {"a": 1, "b": 2}.items() %}{{ k }}={{ v }}{{ "," if not loop.last }}{% endfor %}`, "a=1,b=2"},
		{`{{ "  a b  ".strip() }}|{{ "a,b,,c".split(",") }}|{{ "abc"[::-1] }}|{{ [1,2,3,4][1:3] }}`, "a b|['a', 'b', '', 'c']|cba|[2, 3]"},
		{`{{ undefined_var }}|{{ undefined_var is defined }}|{{ undefined_var | default("d") }}`, "|False|d"},
		{`[{{ u | trim }}|{{ u | upper }}|{{ u | replace("a", "b") }}|{{ u | join(",") }}|{{ u | first }}|{{ u | sort }}|{{ u | wordcount }}]`, "[|||||[]|0]"},
		{`{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}`, "6"},
		{`{% macro m(a, b="B") %}{{ a }}{{ b }}{% endmacro %}{{ m("x") }}{{ m("y", b="z") }}`, "xByz"},
		{"  {% if true %}\n  yes\n  {% endif %}\n", "  yes\n"},
		{"a {{- ' b ' -}} c", "a b c"},
		{`{{ strftime_now("%d %b %Y") }}`, "02 Jan 2026"},
		{`{% raw %}{{ not rendered }}{% endraw %}`, "{{ not rendered }}"},
		{`a{% generation %}b{% endgeneration %}c`, "abc"},
	} {
		got, err := render(t, c.src, nil)
		if err != nil || got != c.want {
			t.Errorf("%s\n got %q (%v)\nwant %q", c.src, got, err, c.want)
		}
	}
	for _, src := range []string{
		`{{ "a" + {"k": 1} }}`,
		`{{ undefined_var.attr }}`,
		`{{ "x".__class__ }}`,
		`{{ [1].append(2) }}`,
		`{{ raise_exception("stop") }}`,
		`{% for x in 3 %}{% endfor %}`,
		`{{ u | tojson }}`, `{{ u | int }}`, `{{ u | indent }}`, `{{ u | dictsort }}`,
	} {
		if out, err := render(t, src, nil); err == nil {
			t.Errorf("%s: rendered %q, want an error", src, out)
		}
	}
	if _, err := render(t, `{{ raise_exception("stop here") }}`, nil); !errors.Is(err, ErrRaised) || !strings.Contains(err.Error(), "stop here") {
		t.Errorf("raise_exception: %v", err)
	}
}

// TestHostileTemplatesStop: recursion, fan-out recursion, huge repetition, huge ranges and
// endless output end as ErrLimit errors, not a stack overflow, a hang or an out-of-memory.
func TestHostileTemplatesStop(t *testing.T) {
	for name, src := range map[string]string{
		"recursive macro": `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`,
		"fan-out":         `{% macro f(n) %}{{ f(n) }}{{ f(n) }}{% endmacro %}{{ f(0) }}`,
		"fan-out shallow": `{% macro f(n) %}{% if n < 40 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}`,
		"huge repeat":     `{{ "a" * 3000000000 }}`,
		"repeat growth":   `{% set ns = namespace(s="ab") %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}`,
		"huge range":      `{% for i in range(100000000000) %}{% endfor %}`,
		"nested loops":    `{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}`,
		"endless output":  `{% for a in range(100000) %}{% for b in range(100000) %}xxxxxxxxxxxxxxxx{% endfor %}{% endfor %}`,
		"big power":       `{{ 10 ** 100 }}`,
		"list growth":     `{% set ns = namespace(l=["aaaaaaaa"]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | join }}`,
	} {
		tpl, err := Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, err = tpl.Render(context.Background(), nil, time.Now(), Limits{MaxSteps: 1_000_000})
		if !errors.Is(err, ErrLimit) {
			t.Errorf("%s: err = %v, want ErrLimit", name, err)
		}
	}
}

// A render stops when its context is cancelled.
func TestRenderHonoursContext(t *testing.T) {
	tpl, err := Parse(`{% for a in range(1000000) %}{% for b in range(1000) %}{% endfor %}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tpl.Render(ctx, nil, time.Now(), Limits{MaxSteps: 1 << 40}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
