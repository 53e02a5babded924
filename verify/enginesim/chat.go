package enginesim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"

	"lifeboat/manifest/modelrepo"
)

// chatMessage is one message of a chat request; content is a string or a list of parts.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name,omitempty"`
}

// text flattens the content as vLLM does for string-format templates: text parts joined by "\n".
func (m chatMessage) text() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", fmt.Errorf("message content must be a string or a list of parts")
	}
	var b bytes.Buffer
	for i, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part type %q is not supported by this model", p.Type)
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

const renderTimeout = 5 * time.Second
const maxRender = 8 << 20

// renderChat renders the chat template for messages, like transformers' apply_chat_template.
func renderChat(t modelrepo.ChatTemplate, msgs []chatMessage, addGenerationPrompt bool, bos, eos string) (string, error) {
	conv := make([]any, 0, len(msgs))
	for _, m := range msgs {
		txt, err := m.text()
		if err != nil {
			return "", err
		}
		e := map[string]any{"role": m.Role, "content": txt}
		if m.Name != "" {
			e["name"] = m.Name
		}
		conv = append(conv, e)
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("chat template %s: render failed: %v", t.Label(), p)}
			}
			done <- r
		}()
		r.out, r.err = renderGonja(t, conv, addGenerationPrompt, bos, eos)
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(renderTimeout):
		return "", fmt.Errorf("chat template %s: rendering did not finish within %s", t.Label(), renderTimeout)
	}
}

var errRenderLimit = errors.New("rendered prompt too large")

type capWriter struct{ bytes.Buffer }

func (w *capWriter) Write(p []byte) (int, error) {
	if w.Len()+len(p) > maxRender {
		return 0, errRenderLimit
	}
	return w.Buffer.Write(p)
}

func renderGonja(t modelrepo.ChatTemplate, conv []any, agp bool, bos, eos string) (string, error) {
	const id = "/chat_template.jinja"
	loader, err := loaders.NewMemoryLoader(map[string]string{id: t.Text})
	if err != nil {
		return "", fmt.Errorf("chat template %s: %v", t.Label(), err)
	}
	cfg := config.New()
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = true
	env := &exec.Environment{
		Context:           exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables),
		Filters:           builtins.Filters,
		Tests:             builtins.Tests,
		ControlStructures: builtins.ControlStructures,
		Methods:           builtins.Methods,
	}
	tpl, err := exec.NewTemplate(id, cfg, loader, env)
	if err != nil {
		return "", fmt.Errorf("chat template %s: TemplateSyntaxError: %v", t.Label(), firstLine(err.Error()))
	}
	now := time.Now()
	vars := exec.NewContext(map[string]any{
		"messages":              conv,
		"add_generation_prompt": agp,
		"tools":                 nil,
		"documents":             nil,
		"bos_token":             bos,
		"eos_token":             eos,
		"raise_exception": func(msg string) (string, error) {
			return "", fmt.Errorf("raise_exception(%q)", msg)
		},
		"strftime_now": func(format string) string { return now.Format("02 Jan 2006") },
	})
	w := &capWriter{}
	if err := tpl.Execute(w, vars); err != nil {
		return "", fmt.Errorf("chat template %s: %v", t.Label(), firstLine(err.Error()))
	}
	return w.String(), nil
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
