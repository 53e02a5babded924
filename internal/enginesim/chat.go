package enginesim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"lifeboat/manifest/modelrepo"
	"lifeboat/manifest/modelrepo/jinja"
)

// chatMessage is one message of a chat request; content is a string or a list of parts.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
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

// maxRender bounds a rendered prompt; vLLM would refuse a far shorter one as over-long anyway.
const maxRender = 8 << 20

// renderChat renders the chat template for messages, like transformers' apply_chat_template,
// through the same bounded renderer the lint uses. As vLLM does, a null content stays None, and
// each tool call's function.arguments JSON string is parsed into a mapping; tools reach the
// template with their keys in request order. A hostile template is a 400, nothing more.
func renderChat(ctx context.Context, t modelrepo.ChatTemplate, msgs []chatMessage, tools json.RawMessage, addGenerationPrompt bool, bos, eos string) (string, error) {
	conv := make([]any, 0, len(msgs))
	for _, m := range msgs {
		e := jinja.NewDict()
		e.Set("role", m.Role)
		if len(m.Content) == 0 || string(m.Content) == "null" {
			e.Set("content", nil)
		} else {
			txt, err := m.text()
			if err != nil {
				return "", err
			}
			e.Set("content", txt)
		}
		if m.Name != "" {
			e.Set("name", m.Name)
		}
		if m.ToolCallID != "" {
			e.Set("tool_call_id", m.ToolCallID)
		}
		if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
			calls, err := toolCalls(m.ToolCalls)
			if err != nil {
				return "", err
			}
			e.Set("tool_calls", calls)
		}
		conv = append(conv, e)
	}
	var toolList []any
	if len(tools) > 0 && string(tools) != "null" {
		v, err := jinja.ParseJSON(tools)
		list, ok := v.([]any)
		if err != nil || !ok {
			return "", fmt.Errorf("tools must be a list of tool objects")
		}
		toolList = list
	}
	out, err := modelrepo.RenderChatTemplate(ctx, t, modelrepo.RenderOptions{
		BOSToken: bos, EOSToken: eos, Now: time.Now(), MaxOutput: maxRender,
		Messages: conv, Tools: toolList, NoGenerationPrompt: !addGenerationPrompt,
	})
	if err != nil {
		return "", fmt.Errorf("chat template: %s", firstLine(err.Error()))
	}
	return out, nil
}

// toolCalls decodes an assistant message's tool_calls, parsing function.arguments strings.
func toolCalls(raw json.RawMessage) ([]any, error) {
	v, err := jinja.ParseJSON(raw)
	list, ok := v.([]any)
	if err != nil || !ok {
		return nil, fmt.Errorf("tool_calls must be a list")
	}
	for _, c := range list {
		d, ok := c.(*jinja.Dict)
		if !ok {
			return nil, fmt.Errorf("each tool call must be an object")
		}
		fn, _ := d.Get("function")
		f, ok := fn.(*jinja.Dict)
		if !ok {
			continue
		}
		if args, ok := f.Get("arguments"); ok {
			if s, isStr := args.(string); isStr {
				parsed, err := jinja.ParseJSON([]byte(s))
				if err != nil {
					return nil, fmt.Errorf("tool call arguments are not JSON: %v", err)
				}
				f.Set("arguments", parsed)
			}
		}
	}
	return list, nil
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
