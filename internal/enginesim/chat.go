package enginesim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

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

// maxRender bounds a rendered prompt; vLLM would refuse a far shorter one as over-long anyway.
const maxRender = 8 << 20

// renderChat renders the chat template for messages, like transformers' apply_chat_template,
// through the same renderer the lint uses (timeout, output cap, panics turned into errors).
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
	out, err := modelrepo.RenderChatTemplate(t, modelrepo.RenderOptions{
		BOSToken: bos, EOSToken: eos, Now: time.Now(), MaxOutput: maxRender,
		Messages: conv, NoGenerationPrompt: !addGenerationPrompt,
	})
	if err != nil {
		return "", fmt.Errorf("chat template: %s", firstLine(err.Error()))
	}
	return out, nil
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
