package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"lifeboat/providers"
)

// A command's result document (-o json, -o yaml) goes through one path: the value is marshalled
// with encoding/json (so struct tags, omitempty and MarshalJSON decide its shape, once), read
// back as an ordered tree whose every string value is redacted and made terminal-safe, and only
// then encoded, as JSON or YAML, for the last time. Nothing is decoded after it was encoded for
// printing: both formats are renderings of the same cleaned values, and exit_code and error are
// added as members of the tree, not spliced into bytes.

// resultTree marshals v and returns its cleaned tree.
func resultTree(v any) (*yaml.Node, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(&b)
	dec.UseNumber()
	n, err := treeValue(dec)
	if err != nil {
		return nil, fmt.Errorf("result document: %w", err)
	}
	return n, nil
}

// treeValue reads one JSON value from dec as a node: string values redacted (providers.Redact)
// and, like object keys, stripped of anything a terminal could act on (providers.TerminalSafe).
func treeValue(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				v, err := treeValue(dec)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, strNode(providers.TerminalSafe(k)), v)
			}
			_, err := dec.Token() // '}'
			return n, err
		case '[':
			n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for dec.More() {
				v, err := treeValue(dec)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, v)
			}
			_, err := dec.Token() // ']'
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		return strNode(providers.TerminalSafe(providers.Redact(t))), nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(t.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

func strNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// setMember sets key in a mapping node to v, replacing a member of that name.
func setMember(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, strNode(key), v)
}

// encodeTree writes n as format ("json": indented with two spaces, <, > and & as they are;
// "yaml": block style, indented with two spaces), ending in a newline.
func encodeTree(w io.Writer, n *yaml.Node, format string) error {
	if format == "yaml" {
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}}); err != nil {
			return err
		}
		if err := enc.Close(); err != nil {
			return err
		}
		_, err := w.Write(b.Bytes())
		return err
	}
	var compact bytes.Buffer
	if err := writeJSONNode(&compact, n); err != nil {
		return err
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, compact.Bytes(), "", "  "); err != nil {
		return err
	}
	ind.WriteByte('\n')
	_, err := w.Write(ind.Bytes())
	return err
}

func writeJSONNode(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, n.Content[i].Value)
			b.WriteByte(':')
			if err := writeJSONNode(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSONNode(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		if n.Tag == "!!str" {
			writeJSONString(b, n.Value)
		} else {
			b.WriteString(n.Value) // a number, true, false or null, as encoding/json wrote it
		}
	default:
		return fmt.Errorf("unexpected node kind %v", n.Kind)
	}
	return nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}
