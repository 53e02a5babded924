package modelrepo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// MaxChatTemplate bounds the size of a chat template the checks accept; real ones are under 20 KB.
const MaxChatTemplate = 4 << 20

// ChatTemplate is one chat template of a repository.
type ChatTemplate struct {
	Source string // file it came from, e.g. "model/tokenizer_config.json"
	Name   string // "default", or the name of a named template (tool_use, rag, …)
	Text   string
}

// Label names the template for messages: the file, plus the template name when it has one.
func (t ChatTemplate) Label() string {
	if t.Name == "" || t.Name == "default" {
		return t.Source
	}
	return fmt.Sprintf("%s (template %q)", t.Source, t.Name)
}

// parseChatTemplateField reads a chat_template value: a string, a list of {name, template} (the
// tokenizer_config.json form for several templates) or an object of name → template
// (chat_template.json of newer processors).
func parseChatTemplateField(v any, source, field string) ([]ChatTemplate, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []ChatTemplate{{Source: source, Name: "default", Text: x}}, nil
	case []any:
		out := make([]ChatTemplate, 0, len(x))
		for i, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: field %s[%d]: want an object {name, template}, got %s", source, field, i, typeName(e))
			}
			name, nok := m["name"].(string)
			tpl, tok := m["template"].(string)
			if !nok || !tok {
				return nil, fmt.Errorf("%s: field %s[%d]: want string fields name and template", source, field, i)
			}
			out = append(out, ChatTemplate{Source: source, Name: name, Text: tpl})
		}
		return out, nil
	case map[string]any:
		names := make([]string, 0, len(x))
		for k := range x {
			names = append(names, k)
		}
		sort.Strings(names)
		out := make([]ChatTemplate, 0, len(x))
		for _, k := range names {
			s, ok := x[k].(string)
			if !ok {
				return nil, fmt.Errorf("%s: field %s.%s: want a string template, got %s", source, field, k, typeName(x[k]))
			}
			out = append(out, ChatTemplate{Source: source, Name: k, Text: s})
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: field %s: want a string or a list of {name, template}, got %s", source, field, typeName(v))
}

// ParseChatTemplateJSON parses chat_template.json: {"chat_template": …}.
func ParseChatTemplateJSON(data []byte, name string) ([]ChatTemplate, error) {
	raw, err := decodeObject(data, name)
	if err != nil {
		return nil, err
	}
	v, ok := raw["chat_template"]
	if !ok {
		return nil, fmt.Errorf("%s: field chat_template missing", name)
	}
	ts, err := parseChatTemplateField(v, name, "chat_template")
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("%s: field chat_template is null", name)
	}
	return ts, nil
}

// CheckChatTemplate checks a template's syntax the way jinja2 would compile it; errors carry the
// template's label, line and column.
func CheckChatTemplate(t ChatTemplate) error {
	if len(t.Text) > MaxChatTemplate {
		return fmt.Errorf("%s: template is %d bytes, more than the %d this check accepts", t.Label(), len(t.Text), MaxChatTemplate)
	}
	if strings.TrimSpace(t.Text) == "" {
		return fmt.Errorf("%s: template is empty", t.Label())
	}
	return CheckJinjaSyntax(t.Text, t.Label())
}

// RenderOptions are the variables Hugging Face passes to a chat template, beyond the messages.
type RenderOptions struct {
	BOSToken, EOSToken string
	// Now is the time strftime_now formats; zero means a fixed date, so output is reproducible.
	Now time.Time
	// Timeout bounds the render; a template can loop for a very long time. Default 5 s.
	Timeout time.Duration
	// MaxOutput bounds the rendered size. Default 1 MiB.
	MaxOutput int
	// Messages is the conversation to render (maps with "role" and "content"); nil means a
	// two-message sample chat, which is what the lint renders.
	Messages []any
	// NoGenerationPrompt renders with add_generation_prompt=false (the default is true).
	NoGenerationPrompt bool
}

// ErrRenderUnsupported means gonja cannot parse a template that jinja2 accepts, so it could not
// be rendered here; it says nothing about the template.
var ErrRenderUnsupported = errors.New("the Go Jinja engine cannot parse this template (jinja2 can)")

// SampleConversation is what RenderChatTemplate renders: a two-message chat.
var sampleConversation = []any{
	map[string]any{"role": "user", "content": "What is the capital of France?"},
	map[string]any{"role": "assistant", "content": "Paris."},
}

// RenderChatTemplate renders t with gonja for o.Messages (by default a two-message conversation)
// and add_generation_prompt=true unless o.NoGenerationPrompt, with the globals transformers provides (raise_exception,
// strftime_now, bos_token, eos_token, tools=none). It returns the rendered text, an error wrapping
// ErrRenderUnsupported when gonja cannot parse the template, or the render error. gonja panics are
// turned into errors. Templates cannot read files: include/import resolve to nothing.
func RenderChatTemplate(t ChatTemplate, o RenderOptions) (string, error) {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = 1 << 20
	}
	if o.Now.IsZero() {
		o.Now = time.Date(2026, time.January, 2, 15, 4, 5, 0, time.UTC)
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	// A runaway template cannot be interrupted inside gonja; the goroutine is abandoned on timeout
	// (the lint is a short-lived process) rather than blocking the whole run.
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("%s: the Go Jinja engine crashed while rendering (%v): %w", t.Label(), p, ErrRenderUnsupported)}
			}
			done <- r
		}()
		r.out, r.err = renderGonja(t, o)
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(o.Timeout):
		return "", fmt.Errorf("%s: rendering did not finish within %s (a loop that never ends?)", t.Label(), o.Timeout)
	}
}

func renderGonja(t ChatTemplate, o RenderOptions) (string, error) {
	const id = "/chat_template.jinja"
	loader, err := loaders.NewMemoryLoader(map[string]string{id: t.Text})
	if err != nil {
		return "", fmt.Errorf("%s: %w", t.Label(), err)
	}
	// transformers compiles chat templates with trim_blocks and lstrip_blocks.
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
		// The message embeds the whole source; the caller only needs to know gonja gave up.
		return "", fmt.Errorf("%s: %w", t.Label(), ErrRenderUnsupported)
	}
	msgs := o.Messages
	if msgs == nil {
		msgs = sampleConversation
	}
	vars := exec.NewContext(map[string]any{
		"messages":              msgs,
		"add_generation_prompt": !o.NoGenerationPrompt,
		"tools":                 nil,
		"documents":             nil,
		"bos_token":             o.BOSToken,
		"eos_token":             o.EOSToken,
		"raise_exception": func(msg string) (string, error) {
			return "", fmt.Errorf("raise_exception(%q)", msg)
		},
		"strftime_now": func(format string) string { return strftime(o.Now, format) },
	})
	w := &limitedWriter{max: o.MaxOutput}
	if err := tpl.Execute(w, vars); err != nil {
		if errors.Is(err, errOutputLimit) {
			return "", fmt.Errorf("%s: rendered output exceeds %d bytes", t.Label(), o.MaxOutput)
		}
		return "", fmt.Errorf("%s: %v", t.Label(), err)
	}
	return w.buf.String(), nil
}

var errOutputLimit = errors.New("output limit reached")

// limitedWriter stops a render whose output grows past max.
type limitedWriter struct {
	buf bytes.Buffer
	max int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.max {
		return 0, errOutputLimit
	}
	return w.buf.Write(p)
}

// strftime formats t with the C directives chat templates use (Llama 3.2 asks for "%d %b %Y").
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'b':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

// decodeObject decodes a JSON object with numbers kept exact, rejecting trailing data.
func decodeObject(data []byte, name string) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %v", name, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("%s: not a JSON object", name)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: trailing data after the JSON object", name)
	}
	return raw, nil
}
