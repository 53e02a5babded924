package tokenizer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decoder turns tokens back into text pieces (the tokenizers library's decode_chain).
type decoder interface {
	decode(toks []string) []string
}

type decSeq []decoder

func (d decSeq) decode(toks []string) []string {
	for _, x := range d {
		toks = x.decode(toks)
	}
	return toks
}

// decByteLevel maps byte-level symbols back to bytes; a token with a character outside the
// table (an added token) is kept as it is.
type decByteLevel struct{}

func (decByteLevel) decode(toks []string) []string {
	var b []byte
	for _, t := range toks {
		start := len(b)
		for _, r := range t {
			c, ok := symToByte[r]
			if !ok {
				b = append(b[:start], t...)
				break
			}
			b = append(b, c)
		}
	}
	return []string{string(b)}
}

type decReplace struct {
	p    *pattern
	with string
}

func (d decReplace) decode(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		s, err := d.p.replaceAll(t, d.with)
		if err != nil {
			s = t
		}
		out[i] = s
	}
	return out
}

// decByteFallback turns runs of <0xNN> tokens into their bytes; a run that is not valid UTF-8
// becomes one U+FFFD per byte, as the tokenizers library does.
type decByteFallback struct{}

func (decByteFallback) decode(toks []string) []string {
	var out []string
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			out = append(out, strings.Repeat("\uFFFD", len(run)))
		}
		run = run[:0]
	}
	for _, t := range toks {
		if len(t) == 6 && strings.HasPrefix(t, "<0x") && t[5] == '>' {
			if v, err := strconv.ParseUint(t[3:5], 16, 8); err == nil {
				run = append(run, byte(v))
				continue
			}
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

type decFuse struct{}

func (decFuse) decode(toks []string) []string { return []string{strings.Join(toks, "")} }

// decStrip removes up to start leading and stop trailing copies of content from each token.
type decStrip struct {
	content     string
	start, stop int
}

func (d decStrip) decode(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		for k := 0; k < d.start && d.content != "" && strings.HasPrefix(t, d.content); k++ {
			t = t[len(d.content):]
		}
		for k := 0; k < d.stop && d.content != "" && strings.HasSuffix(t, d.content); k++ {
			t = t[:len(t)-len(d.content)]
		}
		out[i] = t
	}
	return out
}

// decMetaspace turns the replacement back into spaces and drops the space the pre-tokenizer
// prepended to the first token.
type decMetaspace struct {
	repl    string
	prepend string
}

func (d decMetaspace) decode(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		s := strings.ReplaceAll(t, d.repl, " ")
		if i == 0 && d.prepend != "never" {
			s = strings.TrimPrefix(s, " ")
		}
		out[i] = s
	}
	return out
}

type decoderConfig struct {
	Type           string            `json:"type"`
	Decoders       []json.RawMessage `json:"decoders"`
	Pattern        map[string]string `json:"pattern"`
	Content        string            `json:"content"`
	Start          int               `json:"start"`
	Stop           int               `json:"stop"`
	Replacement    *string           `json:"replacement"`
	PrependScheme  string            `json:"prepend_scheme"`
	AddPrefixSpace *bool             `json:"add_prefix_space"`
}

func parseDecoder(raw json.RawMessage, depth int) (decoder, error) {
	c, ok, err := decodeComponent[decoderConfig](raw, depth)
	if !ok || err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		seq, err := parseSequence("decoders", c.Decoders, depth, parseDecoder)
		if err != nil {
			return nil, err
		}
		return decSeq(seq), nil
	case "ByteLevel":
		return decByteLevel{}, nil
	case "Replace":
		p, err := parsePattern(c.Pattern)
		if err != nil {
			return nil, fmt.Errorf("type Replace: %w", err)
		}
		return decReplace{p: p, with: c.Content}, nil
	case "ByteFallback":
		return decByteFallback{}, nil
	case "Fuse":
		return decFuse{}, nil
	case "Strip":
		if c.Start < 0 || c.Stop < 0 {
			return nil, fmt.Errorf("type Strip: negative start/stop")
		}
		return decStrip{content: c.Content, start: c.Start, stop: c.Stop}, nil
	case "Metaspace":
		d := decMetaspace{repl: "▁", prepend: "always"}
		if c.Replacement != nil {
			d.repl = *c.Replacement
		}
		if c.PrependScheme != "" {
			d.prepend = c.PrependScheme
		} else if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
			d.prepend = "never"
		}
		if d.repl == "" {
			return nil, fmt.Errorf("type Metaspace: empty replacement")
		}
		return d, nil
	}
	return nil, fmt.Errorf("type %q is not supported (engine-sim implements Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace)", c.Type)
}
