package modelrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// realTemplates loads the real chat templates stored under testdata/chat_templates (their sources
// are listed in SOURCES.md there).
func realTemplates(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("testdata/chat_templates/*.jinja")
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates under testdata/chat_templates: %v", err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	return out
}

func TestRealChatTemplatesParse(t *testing.T) {
	for name, src := range realTemplates(t) {
		t.Run(name, func(t *testing.T) {
			if err := CheckChatTemplate(ChatTemplate{Source: name, Text: src}); err != nil {
				t.Fatalf("real template rejected: %v", err)
			}
		})
	}
}

// TestRealChatTemplatesRender renders every real template (Gemma 3's parenthesised conditionals
// included); the output must carry both messages and the generation prompt.
func TestRealChatTemplatesRender(t *testing.T) {
	wantPrompt := map[string]string{
		"gemma-2-2b-it.jinja":                       "<start_of_turn>model\n",
		"gemma-3-4b-it.jinja":                       "<start_of_turn>model\n",
		"gemma-4.jinja":                             "<|turn>model\n",
		"llama-3.2-3b-instruct.jinja":               "<|start_header_id|>assistant<|end_header_id|>\n\n",
		"llama-3.3-70b-instruct.jinja":              "<|start_header_id|>assistant<|end_header_id|>\n\n",
		"qwen3-0.6b.jinja":                          "<|im_start|>assistant\n",
		"mistral-nemo-instruct-2407.jinja":          "Paris.</s>", // no generation prompt in Mistral's format
		"mistral-small-3.2-24b-instruct-2506.jinja": "Paris.</s>",
	}
	for name, src := range realTemplates(t) {
		t.Run(name, func(t *testing.T) {
			out, err := RenderChatTemplate(context.Background(), ChatTemplate{Source: name, Text: src}, RenderOptions{BOSToken: "<s>", EOSToken: "</s>"})
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if !strings.Contains(out, "What is the capital of France?") || !strings.Contains(out, "Paris.") {
				t.Errorf("output lacks the messages: %q", out)
			}
			if w, ok := wantPrompt[name]; ok && !strings.Contains(out, w) {
				t.Errorf("output lacks %q: %q", w, out)
			}
		})
	}
}

func TestRenderStrftimeNow(t *testing.T) {
	now := time.Date(2025, time.March, 7, 9, 5, 0, 0, time.UTC)
	out, err := RenderChatTemplate(context.Background(), ChatTemplate{Source: "t", Text: `{{ strftime_now("%d %b %Y|%Y-%m-%d|%B %A %H:%M %%") }}`}, RenderOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if want := "07 Mar 2025|2025-03-07|March Friday 09:05 %"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestRenderFailures(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"raise_exception", `{{ raise_exception("System role not supported") }}`, "System role not supported"},
		{"output bomb", `{% for i in range(100000) %}{{ "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" }}{% endfor %}`, "exceeds"},
		{"include cannot read files", `{% include "/etc/passwd" %}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := RenderChatTemplate(context.Background(), ChatTemplate{Source: "t.jinja", Text: tc.src}, RenderOptions{MaxOutput: 1 << 16})
			if err == nil {
				t.Fatalf("rendered without error: %q", out)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "t.jinja") {
				t.Errorf("error %q lacks %q or the file name", err, tc.want)
			}
		})
	}
}

func TestJinjaSyntax(t *testing.T) {
	valid := []string{
		"plain text with { braces } and %",
		"{{ a }}{{- b -}}{{+ c }}",
		"{{ {'a': {'b': 1}} }}",
		"{{ (x if y else z) + 'w' }}",
		"{{ 'a' 'b' ~ 1_000 ~ 0x1F ~ 1.5e3 ~ a.0.1 }}",
		"{{ x is not none and y is divisibleby 3 or z is string }}",
		"{{ a | default('x') | join(', ') | tojson(indent=4) }}",
		"{{ f(1, *args, k=2, **kw,) }}",
		"{{ m[1:2] ~ m[::-1] ~ m[:-1] ~ m[1,2] }}",
		"{{ not not a }}{{ -1 }}{{ 2 ** 3 // 4 % 5 }}{{ a not in b }}",
		"{% if a %}x{% elif b %}y{% else %}z{% endif %}",
		"{% for k, v in d | items if k != 'x' recursive %}{{ loop(v) }}{% else %}none{% endfor %}",
		"{% for (a, b) in pairs %}{% if a %}{% break %}{% endif %}{% continue %}{% endfor %}",
		"{% set ns = namespace(a=1) %}{% set ns.a = 2 %}{% set x, y = 1, 2 %}",
		"{% set block | trim %} text {% endset %}",
		"{% macro f(a, b=1) %}{{ a }}{% endmacro %}{{ f(1) }}",
		"{% call(user) f(1) %}{{ user }}{% endcall %}",
		"{% filter upper | trim %}x{% endfilter %}",
		"{% with a = 1, b = 2 %}{{ a }}{% endwith %}",
		"{% raw %}{{ not parsed {% endraw %}",
		"{# comment {{ #}{%- generation -%}x{%- endgeneration -%}",
		"{% block body scoped %}x{% endblock body %}",
		"{% include 'x' ignore missing without context %}{% import 'm' as m %}{% from 'm' import a as b, c with context %}",
		"{% if a: %}x{% endif %}",
		"{% print a, b %}",
		// constructs of the gpt-oss, functionary and granite templates
		"{%- if prop_name not in (param_spec.required or []) -%}?{%- endif -%}",
		`{{- (tool_call.content_type if tool_call.content_type is defined else "json") + "<|message|>" }}`,
		`{%- for field, field_name in [("maximum", "Maximum"), ("minimum", "Minimum")] -%}{{ field_name ~ "=" ~ param[field] }}{%- endfor -%}`,
		`{%- set offset = "    " * depth -%}{%- set t = xs|map(attribute="type")|unique|list -%}{{ param.get("type", "any") }}`,
		"{%- for m in loop_messages[loop.index:] %}{% endfor %}{{- ' ' + controls | tojson()}}",
		"{%- if add_generation_prompt -%}\n<|start|>assistant\n{%- endif -%}",
	}
	for _, src := range valid {
		if err := CheckJinjaSyntax(src, "t"); err != nil {
			t.Errorf("%q rejected: %v", src, err)
		}
	}
	invalid := []struct {
		src  string
		line int
		want string
	}{
		{"line1\n{% if x %}\nno end", 2, "'if' block opened on line 2 is never closed"},
		{"{% for x in y %}\n{% if a %}\n{% endfor %}", 3, "unknown statement 'endfor'"},
		{"a\nb\n{{ x + }}", 3, "unexpected end of print statement"},
		{"{{ foo( }}", 1, "unexpected '}', expected ')'"},
		{"{{ foo(", 1, "'(' is never closed"},
		{"\n\n{{ a ) }}", 3, "unexpected ')'"},
		{"{% endif %}", 1, "unknown statement 'endif'"},
		{"{% do x.append(1) %}", 1, "unknown statement 'do'"},
		{"{{ 'abc }}", 1, "never closed"},
		{"x\n{# open comment", 2, "comment opened here is never closed"},
		{"{% raw %}x", 1, "raw block"},
		{"{{ a !b }}", 1, "unexpected character"},
		{"{% break %}", 1, "outside of a for loop"},
		{"{% set true = 1 %}", 1, "cannot assign"},
		{"{% macro f(a=1, b) %}{% endmacro %}", 1, "non-default argument"},
		{"{{ f(a=1, 2) }}", 1, "positional argument after a keyword"},
		{"{{ a is b is c }}", 1, "chain"},
		{"{{ }}", 1, "expected an expression"},
		{"{% %}", 1, "expected a statement name"},
		{"{% if x %}{% else %}{% else %}{% endif %}", 1, "unknown statement 'else'"},
		{"{{ x }", 1, "unexpected '}'"},
		{"{% for x y %}{% endfor %}", 1, "expected 'in'"},
		{strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300), 1, "nesting"},
		{"{{ " + strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300) + " }}", 1, "nesting"},
	}
	for _, tc := range invalid {
		err := CheckJinjaSyntax(tc.src, "t.jinja")
		var se *JinjaSyntaxError
		if !errors.As(err, &se) {
			if tc.want == "nesting" && err == nil && !strings.Contains(tc.src, "{{") {
				continue // plain text, not an expression
			}
			t.Errorf("%q: want a syntax error, got %v", tc.src, err)
			continue
		}
		if se.Line != tc.line || se.Col < 1 || !strings.Contains(se.Msg, tc.want) || !strings.HasPrefix(err.Error(), fmt.Sprintf("t.jinja:%d:%d: ", se.Line, se.Col)) {
			t.Errorf("%q: got %q (line %d), want line %d and %q", tc.src, err, se.Line, tc.line, tc.want)
		}
	}
}

// TestBrokenRealTemplates breaks real templates the way hand edits do and checks the error names
// the line.
func TestBrokenRealTemplates(t *testing.T) {
	tpls := realTemplates(t)
	llama := tpls["llama-3.3-70b-instruct.jinja"]
	qwen := tpls["qwen3-0.6b.jinja"]
	lineOf := func(src, needle string) int { return strings.Count(src[:strings.Index(src, needle)], "\n") + 1 }
	for _, tc := range []struct {
		name string
		src  string
		line int
	}{
		// drop the last endfor: the for loop over messages is never closed
		{"unclosed for", strings.Replace(llama, "{%- endfor %}\n{%- if add_generation_prompt %}", "{%- if add_generation_prompt %}", 1), lineOf(llama, "{%- for message in messages %}")},
		// a stray parenthesis in an if
		{"bad syntax", strings.Replace(qwen, "{%- if tools %}", "{%- if (tools %}", 1), 1},
		{"bad operator", strings.Replace(qwen, "messages|length - 1)", "messages|length - - )", 1), lineOf(qwen, "messages|length - 1)")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckChatTemplate(ChatTemplate{Source: "model/chat_template.jinja", Text: tc.src})
			var se *JinjaSyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("want a syntax error, got %v", err)
			}
			if se.Line != tc.line {
				t.Errorf("line %d, want %d: %v", se.Line, tc.line, err)
			}
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("model/chat_template.jinja:%d:%d: ", se.Line, se.Col)) || se.Col < 1 {
				t.Errorf("error does not name the file and line: %v", err)
			}
		})
	}
}

func TestParseChatTemplateJSON(t *testing.T) {
	for _, tc := range []struct {
		in    string
		names []string
		err   string
	}{
		{`{"chat_template": "{{ x }}"}`, []string{"default"}, ""},
		{`{"chat_template": [{"name": "default", "template": "a"}, {"name": "tool_use", "template": "b"}]}`, []string{"default", "tool_use"}, ""},
		{`{"chat_template": {"rag": "a", "default": "b"}}`, []string{"default", "rag"}, ""},
		{`{"chat_template": 3}`, nil, "field chat_template: want a string"},
		{`{"chat_template": [{"name": "x"}]}`, nil, "chat_template[0]"},
		{`{}`, nil, "chat_template missing"},
		{`{"chat_template": "x"} trailing`, nil, "trailing data"},
		{`[]`, nil, "not a JSON object"},
	} {
		ts, err := ParseChatTemplateJSON([]byte(tc.in), "chat_template.json")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "chat_template.json: ") {
				t.Errorf("%s: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		var names []string
		for _, x := range ts {
			names = append(names, x.Name)
		}
		if strings.Join(names, ",") != strings.Join(tc.names, ",") {
			t.Errorf("%s: names %v, want %v", tc.in, names, tc.names)
		}
	}
}
