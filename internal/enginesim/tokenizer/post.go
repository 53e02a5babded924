package tokenizer

import (
	"encoding/json"
	"fmt"
)

// postProcessor is what a single sequence gets around it when special tokens are added.
type postProcessor struct {
	prefix, suffix []int
}

type postConfig struct {
	Type       string            `json:"type"`
	Processors []json.RawMessage `json:"processors"`
	Single     []map[string]struct {
		ID string `json:"id"`
	} `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"`
	CLS []json.RawMessage `json:"cls"`
	SEP []json.RawMessage `json:"sep"`
}

// parsePostProcessor reads TemplateProcessing (its "single" template), RobertaProcessing and
// BertProcessing ([cls] A [sep]), ByteLevel (offsets only: no tokens) and Sequence.
func parsePostProcessor(raw json.RawMessage, depth int) (*postProcessor, error) {
	p := &postProcessor{}
	if isNull(raw) {
		return p, nil
	}
	if depth > maxNesting {
		return nil, fmt.Errorf("nested more than %d deep", maxNesting)
	}
	var c postConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		for i, r := range c.Processors {
			q, err := parsePostProcessor(r, depth+1)
			if err != nil {
				return nil, fmt.Errorf("processors[%d]: %w", i, err)
			}
			p.prefix = append(q.prefix, p.prefix...)
			p.suffix = append(p.suffix, q.suffix...)
		}
	case "TemplateProcessing":
		seenSeq := false
		for i, piece := range c.Single {
			if _, ok := piece["Sequence"]; ok {
				seenSeq = true
				continue
			}
			st, ok := piece["SpecialToken"]
			if !ok {
				return nil, fmt.Errorf("single[%d]: want SpecialToken or Sequence", i)
			}
			ids := c.SpecialTokens[st.ID].IDs
			if len(ids) == 0 {
				return nil, fmt.Errorf("single[%d]: special token %q has no ids in special_tokens", i, st.ID)
			}
			if seenSeq {
				p.suffix = append(p.suffix, ids...)
			} else {
				p.prefix = append(p.prefix, ids...)
			}
		}
	case "RobertaProcessing", "BertProcessing":
		cls, err := pairID(c.CLS)
		if err != nil {
			return nil, fmt.Errorf("%s: cls: %w", c.Type, err)
		}
		sep, err := pairID(c.SEP)
		if err != nil {
			return nil, fmt.Errorf("%s: sep: %w", c.Type, err)
		}
		p.prefix, p.suffix = []int{cls}, []int{sep}
	case "ByteLevel":
	default:
		return nil, fmt.Errorf("type %q is not supported (engine-sim implements TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel, Sequence)", c.Type)
	}
	return p, nil
}

// pairID reads a ["token", id] pair.
func pairID(raw []json.RawMessage) (int, error) {
	var id int
	if len(raw) != 2 || json.Unmarshal(raw[1], &id) != nil {
		return 0, fmt.Errorf("want [token, id]")
	}
	return id, nil
}
