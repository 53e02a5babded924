package modelrepo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"lifeboat/manifest/modelrepo/jinja"
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

// JinjaSyntaxError is the error of the one Jinja parser (manifest/modelrepo/jinja): the file,
// line and column of the problem.
type JinjaSyntaxError = jinja.SyntaxError

// CheckJinjaSyntax parses a Jinja template with jinja2's grammar and returns a *JinjaSyntaxError
// naming name, the line and the column of the first problem, or nil. It does not render anything;
// constructs jinja2 accepts that the Go renderer does not run are not errors here.
func CheckJinjaSyntax(src, name string) error { return jinja.Check(src, name) }

// RenderOptions are the variables Hugging Face passes to a chat template, beyond the messages.
type RenderOptions struct {
	BOSToken, EOSToken string
	// Now is the time strftime_now formats; zero means a fixed date, so output is reproducible.
	Now time.Time
	// Timeout bounds the render (default 5 s); the context given to RenderChatTemplate does too.
	Timeout time.Duration
	// MaxOutput bounds the rendered size and every value built on the way. Default 1 MiB.
	MaxOutput int
	// MaxSteps bounds evaluation steps (default jinja.Limits' 10,000,000); MaxDepth bounds macro
	// recursion and nesting (default 100).
	MaxSteps int64
	MaxDepth int
	// Messages is the conversation to render (maps with "role" and "content", or *jinja.Dict);
	// nil means a two-message sample chat, which is what the lint renders.
	Messages []any
	// Tools is the tools list passed as `tools` (nil: none).
	Tools []any
	// NoGenerationPrompt renders with add_generation_prompt=false (the default is true).
	NoGenerationPrompt bool
}

// ErrRenderUnsupported is jinja.ErrUnsupported: the renderer cannot run a construct jinja2
// accepts (a recursive loop, a call block with caller arguments); it says nothing about the
// template.
var ErrRenderUnsupported = jinja.ErrUnsupported

// ErrRenderLimit is jinja.ErrLimit: the render hit its depth, step or output budget (a hostile
// or runaway template).
var ErrRenderLimit = jinja.ErrLimit

// SampleConversation is what RenderChatTemplate renders: a two-message chat.
var sampleConversation = []any{
	map[string]any{"role": "user", "content": "What is the capital of France?"},
	map[string]any{"role": "assistant", "content": "Paris."},
}

// RenderChatTemplate renders t the way transformers' apply_chat_template does (jinja2 with
// trim_blocks and lstrip_blocks in an immutable sandbox; see manifest/modelrepo/jinja) for o.Messages (by
// default a two-message conversation) with add_generation_prompt=true unless
// o.NoGenerationPrompt, and the globals transformers provides (raise_exception, strftime_now,
// bos_token, eos_token, tools). Rendering is bounded by depth, steps, output size, o.Timeout and
// ctx: a hostile template is an error wrapping ErrRenderLimit, never a hang or a crash.
func RenderChatTemplate(ctx context.Context, t ChatTemplate, o RenderOptions) (string, error) {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = 1 << 20
	}
	if o.Now.IsZero() {
		o.Now = time.Date(2026, time.January, 2, 15, 4, 5, 0, time.UTC)
	}
	if len(t.Text) > MaxChatTemplate {
		return "", fmt.Errorf("%s: template is %d bytes, more than the %d this renderer accepts", t.Label(), len(t.Text), MaxChatTemplate)
	}
	tpl, err := jinja.ParseNamed(t.Text, t.Label())
	if err != nil {
		return "", err // names the template, line and column; wraps ErrRenderUnsupported when jinja2 would run it
	}
	msgs := o.Messages
	if msgs == nil {
		msgs = sampleConversation
	}
	var tools any
	if o.Tools != nil {
		tools = o.Tools
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	out, err := tpl.Render(ctx, map[string]any{
		"messages":              msgs,
		"add_generation_prompt": !o.NoGenerationPrompt,
		"tools":                 tools,
		"documents":             nil,
		"bos_token":             o.BOSToken,
		"eos_token":             o.EOSToken,
	}, o.Now, jinja.Limits{MaxOutput: o.MaxOutput, MaxSteps: o.MaxSteps, MaxDepth: o.MaxDepth})
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "", fmt.Errorf("%s: rendering did not finish within %s (a loop that never ends?): %w", t.Label(), o.Timeout, ErrRenderLimit)
	case err != nil:
		return "", fmt.Errorf("%s: %w", t.Label(), err)
	}
	return out, nil
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
