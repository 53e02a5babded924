package enginesim

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lifeboat/internal/sample"
)

// Gemma 3's published template uses parenthesised conditionals ("(a if c else b)"); vLLM renders
// it, so engine-sim must serve chats with it.
func TestChatGemma3Template(t *testing.T) {
	l := genRepo(t, sample.Options{})
	copyFile(t, filepath.Join("..", "..", "manifest", "modelrepo", "testdata", "chat_templates", "gemma-3-4b-it.jinja"), filepath.Join(l.ModelDir, "chat_template.jinja"))
	serveBoth(t, l)
}

// Tool calls (arguments as a JSON string, parsed the way vLLM does) and tool results reach the
// template; a template that reads them renders them.
func TestChatToolCalls(t *testing.T) {
	l := genRepo(t, sample.Options{})
	tpl := `{% if messages[1].tool_calls[0].function.arguments.city != "Oslo" or messages[1].content is not none or messages[2].tool_call_id != "c1" or tools[0].function.name != "w" %}{{ raise_exception("tool call fields did not reach the template") }}{% endif %}{% for m in messages %}{{ m.role }}{% endfor %}`
	if err := os.WriteFile(filepath.Join(l.ModelDir, "chat_template.jinja"), []byte(tpl), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := newTestServer(t, l, ServerOptions{})
	body := `{"model": "llama-demo", "max_tokens": 2, "messages": [{"role": "user", "content": "weather?"},
	  {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{\"city\": \"Oslo\"}"}}]},
	  {"role": "tool", "tool_call_id": "c1", "content": "cold"}],
	  "tools": [{"type": "function", "function": {"name": "w", "parameters": {}}}]}`
	resp := post(t, hs.URL+"/tokenize", body)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("tokenize: %d %s", resp.StatusCode, b)
	}
}

// A hostile chat template (unbounded recursion, a 3 GB string) is an HTTP 400 for that request,
// quickly, and the server keeps serving.
func TestChatHostileTemplateIs400(t *testing.T) {
	for name, tpl := range map[string]string{
		"recursion": `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`,
		"fan-out":   `{% macro f(n) %}{{ f(n) }}{{ f(n) }}{% endmacro %}{{ f(0) }}`,
		"repeat":    `{{ "a" * 3000000000 }}`,
	} {
		t.Run(name, func(t *testing.T) {
			l := genRepo(t, sample.Options{})
			if err := os.WriteFile(filepath.Join(l.ModelDir, "chat_template.jinja"), []byte(tpl), 0o644); err != nil {
				t.Fatal(err)
			}
			_, hs := newTestServer(t, l, ServerOptions{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				resp := post(t, hs.URL+"/v1/chat/completions", strings.Replace(chatBody, `"stream": true`, `"stream": false`, 1))
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 400 || !strings.Contains(string(b), "chat template") {
					t.Errorf("chat: %d %s, want 400 naming the chat template", resp.StatusCode, b)
				}
			}()
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("the chat request did not finish")
			}
			resp := post(t, hs.URL+"/v1/completions", `{"model": "llama-demo", "prompt": "still alive?", "max_tokens": 2}`)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("completion after the hostile chat: %d", resp.StatusCode)
			}
		})
	}
}
