package jinja

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestErrorsCarryPosition: both entry points — Check (the lint's strict checker) and ParseNamed
// (the renderer) — report a broken template as one *SyntaxError naming the file, line and column.
func TestErrorsCarryPosition(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		line, col int
		want      string
	}{
		{"unclosed block", "{% for m in messages %}\n{{ m.content }}", 1, 1, "the 'for' block opened on line 1 is never closed"},
		{"unclosed tag", "a\n  {{ x", 2, 3, "tag opened here is never closed (missing '}}')"},
		{"bad token", "{{ a !b }}", 1, 6, "unexpected character '!'"},
		{"bad escape", `{{ "\x4" }}`, 1, 4, `truncated \x escape`},
		{"unknown tag", "{% frobnicate %}", 1, 1, "unknown statement 'frobnicate'"},
		{"stray end tag", "{% if a %}\n  {% endfor %}", 2, 3, "unknown statement 'endfor' (the innermost open block is 'if' from line 1)"},
		{"unbalanced parenthesis", "{{ f(a, b }}", 1, 11, "unexpected '}', expected ')'"},
		{"unclosed parenthesis", "{% if (a %}", 1, 11, "unexpected '}', expected ')'"},
		{"extra parenthesis", "{{ a) }}", 1, 5, "unexpected ')'"},
		{"error on line 3", "{% for m in messages %}\n{{ m.role }}\n{{ m.content + }}\n{% endfor %}", 3, 16, "unexpected end of print statement '}}'"},
		{"expected in", "x\ny\n{% for a b %}{% endfor %}", 3, 10, "expected 'in', got 'b'"},
		{"break outside loop", "{% if x %}{% break %}{% endif %}", 1, 11, "'break' outside of a for loop"},
		{"multi-byte column", "é {{ ) }}", 1, 6, "unexpected ')'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := Check(tc.src, "chat_template.jinja")
			_, parse := ParseNamed(tc.src, "chat_template.jinja")
			for entry, err := range map[string]error{"Check": check, "ParseNamed": parse} {
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Fatalf("%s: want a *SyntaxError, got %v", entry, err)
				}
				if se.Line != tc.line || se.Col != tc.col || !strings.Contains(se.Msg, tc.want) || se.Unsupported {
					t.Errorf("%s: got %d:%d %q, want %d:%d %q", entry, se.Line, se.Col, se.Msg, tc.line, tc.col, tc.want)
				}
				if prefix := fmt.Sprintf("chat_template.jinja:%d:%d: ", tc.line, tc.col); !strings.HasPrefix(err.Error(), prefix) {
					t.Errorf("%s: %q does not start with %q", entry, err, prefix)
				}
			}
		})
	}
	// Without a name, the position still leads.
	if _, err := Parse("{{ x"); err == nil || err.Error() != "1:1: tag opened here is never closed (missing '}}')" {
		t.Errorf("Parse: %v", err)
	}
}

// TestUnsupportedConstructs: jinja2 compiles these and Check accepts them; the renderer refuses
// them with an error that wraps ErrUnsupported and still names the position.
func TestUnsupportedConstructs(t *testing.T) {
	for _, tc := range []struct {
		src       string
		line, col int
		want      string
	}{
		{"{% for x in xs recursive %}{{ loop(x) }}{% endfor %}", 1, 16, "recursive loops"},
		{"a\n{% call(u) f() %}{{ u }}{% endcall %}", 2, 8, "caller arguments"},
		{"{% include 'x' %}", 1, 1, "include is not available"},
		{"{% with a = 1 %}{{ a }}{% endwith %}", 1, 1, "with blocks"},
		{"{{ f(*xs) }}", 1, 6, "* arguments"},
		{"{% for (a, (b, c)) in xs %}{% endfor %}", 1, 8, "nested unpacking"},
		{"{{ m[1, 2] }}", 1, 5, "2 indices"},
	} {
		if err := Check(tc.src, "t.jinja"); err != nil {
			t.Errorf("%q: Check: %v", tc.src, err)
		}
		_, err := ParseNamed(tc.src, "t.jinja")
		var se *SyntaxError
		if !errors.Is(err, ErrUnsupported) || !errors.As(err, &se) || se.Line != tc.line || se.Col != tc.col || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an ErrUnsupported at %d:%d about %q", tc.src, err, tc.line, tc.col, tc.want)
		}
	}
}

// TestJinja2Grammar pins where the one parser follows jinja2's grammar: precedence of ~ under
// + and -, a sign binding before filters, filter chains on blocks, print.
func TestJinja2Grammar(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`{{ 2 ~ 3 * 2 }}|{{ "a" ~ "b" + "c" }}|{{ 2 ** 3 ** 2 }}`, "26|abc|64"},
		{`{{ -3 | abs }}|{{ -x.y }}`, "3|-2"},
		{`{% filter upper | trim %}  ab  {% endfilter %}`, "AB"},
		{`{% set s | upper %}ab{% endset %}{{ s }}`, "AB"},
		{`{% print "a", 1 %}`, "a1"},
		{`{{ 0x1F }}|{{ 1_000 }}|{{ 0b11 }}|{{ "\x41\u00e9\101" }}`, "31|1000|3|Aé" + "A"},
		{`{{ [1, 2, 3].1 }}|{{ (1, 2)[0] }}`, "2|1"},
		{`{%- for a, b in [(1, 2)] -%}{{ a + b }}{% endfor %}`, "3"},
		{"{% if x +%}\n  y{% endif %}", "\n  y"},
	} {
		tpl, err := Parse(c.src)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		got, err := tpl.Render(context.Background(), map[string]any{"x": map[string]any{"y": 2}}, time.Now(), Limits{})
		if err != nil || got != c.want {
			t.Errorf("%s\n got %q (%v)\nwant %q", c.src, got, err, c.want)
		}
	}
	// jinja2 raises on str + int: "a" ~ 1 is concatenated before + 2 is added.
	tpl, err := Parse(`{{ "a" ~ 1 + 2 }}`)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := tpl.Render(context.Background(), nil, time.Now(), Limits{}); err == nil {
		t.Errorf(`"a" ~ 1 + 2 rendered %q, want an error`, out)
	}
}
