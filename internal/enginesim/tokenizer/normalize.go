package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a section of text before pre-tokenization.
type normalizer interface {
	normalize(s string) (string, error)
}

type normSeq []normalizer

func (n normSeq) normalize(s string) (string, error) {
	for _, x := range n {
		var err error
		if s, err = x.normalize(s); err != nil {
			return "", err
		}
	}
	return s, nil
}

type normForm struct{ f norm.Form }

func (n normForm) normalize(s string) (string, error) { return n.f.String(s), nil }

type normLower struct{}

func (normLower) normalize(s string) (string, error) { return strings.ToLower(s), nil }

type normStrip struct{ left, right bool }

func (n normStrip) normalize(s string) (string, error) {
	if n.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if n.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s, nil
}

type normStripAccents struct{}

// normalize drops combining marks (Mn), as the tokenizers library's StripAccents does after NFD.
func (normStripAccents) normalize(s string) (string, error) {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		return r
	}, s), nil
}

type normPrepend struct{ s string }

func (n normPrepend) normalize(s string) (string, error) {
	if s == "" {
		return s, nil
	}
	return n.s + s, nil
}

type normReplace struct {
	p    *pattern
	with string
}

func (n normReplace) normalize(s string) (string, error) { return n.p.replaceAll(s, n.with) }

type normalizerConfig struct {
	Type        string            `json:"type"`
	Normalizers []json.RawMessage `json:"normalizers"`
	Pattern     map[string]string `json:"pattern"`
	Content     string            `json:"content"`
	Prepend     string            `json:"prepend"`
	StripLeft   bool              `json:"strip_left"`
	StripRight  bool              `json:"strip_right"`
	Left        *bool             `json:"left"`
	Right       *bool             `json:"right"`
}

// parseNormalizer reads a normalizer; nil, nil for none (JSON null or an empty Sequence).
func parseNormalizer(raw json.RawMessage, depth int) (normalizer, error) {
	c, ok, err := decodeComponent[normalizerConfig](raw, depth)
	if !ok || err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		seq, err := parseSequence("normalizers", c.Normalizers, depth, parseNormalizer)
		if len(seq) == 0 || err != nil {
			return nil, err
		}
		return normSeq(seq), nil
	case "NFC":
		return normForm{norm.NFC}, nil
	case "NFD":
		return normForm{norm.NFD}, nil
	case "NFKC":
		return normForm{norm.NFKC}, nil
	case "NFKD":
		return normForm{norm.NFKD}, nil
	case "Lowercase":
		return normLower{}, nil
	case "StripAccents":
		return normStripAccents{}, nil
	case "Strip":
		l, r := c.StripLeft, c.StripRight
		if c.Left != nil {
			l = *c.Left
		}
		if c.Right != nil {
			r = *c.Right
		}
		return normStrip{left: l, right: r}, nil
	case "Prepend":
		return normPrepend{s: c.Prepend}, nil
	case "Replace":
		p, err := parsePattern(c.Pattern)
		if err != nil {
			return nil, fmt.Errorf("type Replace: %w", err)
		}
		return normReplace{p: p, with: c.Content}, nil
	}
	return nil, fmt.Errorf("type %q is not supported (engine-sim implements Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Prepend, Replace)", c.Type)
}
