package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// preTokenizer splits the pieces of a normalized section into smaller pieces; first is true for
// the section at the start of the input (Metaspace's prepend_scheme "first").
type preTokenizer interface {
	split(pieces []string, first bool) ([]string, error)
}

type preSeq []preTokenizer

func (p preSeq) split(pieces []string, first bool) ([]string, error) {
	for _, x := range p {
		var err error
		if pieces, err = x.split(pieces, first); err != nil {
			return nil, err
		}
	}
	return pieces, nil
}

// Split behaviours: what happens to the delimiters.
const (
	behRemoved = iota
	behIsolated
	behMergedWithPrevious
	behMergedWithNext
	behContiguous
)

var behaviors = map[string]int{
	"Removed": behRemoved, "Isolated": behIsolated, "MergedWithPrevious": behMergedWithPrevious,
	"MergedWithNext": behMergedWithNext, "Contiguous": behContiguous,
}

type preSplit struct {
	p        *pattern
	behavior int
	invert   bool
}

func (s preSplit) split(pieces []string, _ bool) ([]string, error) {
	var out []string
	for _, piece := range pieces {
		ms, err := s.p.findAll(piece)
		if err != nil {
			return nil, err
		}
		out = splitBy(out, piece, ms, s.behavior, s.invert)
	}
	return out, nil
}

// splitBy appends the pieces of s cut at the delimiter ranges ms (the matches, or with invert the
// gaps between them) the way the tokenizers library's SplitDelimiterBehavior does.
func splitBy(out []string, s string, ms [][2]int, behavior int, invert bool) []string {
	type span struct {
		a, b   int
		delim  bool
		closed bool // a piece that took its following delimiter (MergedWithPrevious)
	}
	var spans []span
	last := 0
	for _, m := range ms {
		if m[0] > last {
			spans = append(spans, span{a: last, b: m[0], delim: invert})
		}
		spans = append(spans, span{a: m[0], b: m[1], delim: !invert})
		last = m[1]
	}
	if last < len(s) {
		spans = append(spans, span{a: last, b: len(s), delim: invert})
	}
	var cur []span // pieces being built: [a, b)
	for _, sp := range spans {
		switch {
		case !sp.delim:
			if behavior == behMergedWithNext && len(cur) > 0 && cur[len(cur)-1].delim {
				cur[len(cur)-1] = span{a: cur[len(cur)-1].a, b: sp.b}
			} else {
				cur = append(cur, sp)
			}
		case behavior == behRemoved:
		case behavior == behIsolated:
			cur = append(cur, span{a: sp.a, b: sp.b})
		case behavior == behMergedWithPrevious:
			if n := len(cur); n > 0 && !cur[n-1].delim && !cur[n-1].closed {
				cur[n-1].b, cur[n-1].closed = sp.b, true
			} else {
				cur = append(cur, span{a: sp.a, b: sp.b, closed: true})
			}
		case behavior == behMergedWithNext:
			cur = append(cur, sp) // joined with the next non-delimiter
		case behavior == behContiguous:
			if len(cur) > 0 && cur[len(cur)-1].delim {
				cur[len(cur)-1].b = sp.b
			} else {
				cur = append(cur, sp)
			}
		}
	}
	for _, c := range cur {
		if c.b > c.a {
			out = append(out, s[c.a:c.b])
		}
	}
	return out
}

// gpt2Pattern is the regex a ByteLevel pre-tokenizer applies when use_regex is true.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

type preByteLevel struct {
	prefixSpace bool
	re          *pattern // nil: use_regex false
}

func (p preByteLevel) split(pieces []string, _ bool) ([]string, error) {
	var out []string
	for _, piece := range pieces {
		if p.prefixSpace && !strings.HasPrefix(piece, " ") {
			piece = " " + piece
		}
		parts := []string{piece}
		if p.re != nil {
			ms, err := p.re.findAll(piece)
			if err != nil {
				return nil, err
			}
			parts = splitBy(nil, piece, ms, behIsolated, false)
		}
		for _, s := range parts {
			out = append(out, byteLevelEncode(s))
		}
	}
	return out, nil
}

// byteToSym is GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to code
// points from 256 up, in byte order; symToByte is its inverse.
var byteToSym, symToByte = byteLevelTables()

func byteLevelTables() (fwd [256]rune, inv map[rune]byte) {
	inv = map[rune]byte{}
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			fwd[b] = rune(b)
		} else {
			fwd[b] = rune(256 + n)
			n++
		}
		inv[fwd[b]] = byte(b)
	}
	return fwd, inv
}

func byteLevelEncode(s string) string {
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteToSym[s[i]])
	}
	return b.String()
}

type preMetaspace struct {
	repl    string
	prepend string // always, first, never
	words   bool   // split into words at the replacement (MergedWithNext)
}

func (p preMetaspace) split(pieces []string, first bool) ([]string, error) {
	var out []string
	for i, piece := range pieces {
		s := strings.ReplaceAll(piece, " ", p.repl)
		if !strings.HasPrefix(s, p.repl) && (p.prepend == "always" || p.prepend == "first" && first && i == 0) {
			s = p.repl + s
		}
		if !p.words {
			out = append(out, s)
			continue
		}
		lit := &pattern{literal: p.repl}
		ms, _ := lit.findAll(s)
		out = splitBy(out, s, ms, behMergedWithNext, false)
	}
	return out, nil
}

type preDigits struct{ individual bool }

func (p preDigits) split(pieces []string, _ bool) ([]string, error) {
	var out []string
	for _, piece := range pieces {
		var ms [][2]int
		for i := 0; i < len(piece); {
			r, n := utf8.DecodeRuneInString(piece[i:])
			if !unicode.IsNumber(r) {
				i += n
				continue
			}
			j := i + n
			for !p.individual && j < len(piece) {
				r2, n2 := utf8.DecodeRuneInString(piece[j:])
				if !unicode.IsNumber(r2) {
					break
				}
				j += n2
			}
			ms = append(ms, [2]int{i, j})
			i = j
		}
		out = splitBy(out, piece, ms, behIsolated, false)
	}
	return out, nil
}

type preWhitespaceSplit struct{}

func (preWhitespaceSplit) split(pieces []string, _ bool) ([]string, error) {
	var out []string
	for _, p := range pieces {
		out = append(out, strings.FieldsFunc(p, unicode.IsSpace)...)
	}
	return out, nil
}

type preTokenizerConfig struct {
	Type             string            `json:"type"`
	Pretokenizers    []json.RawMessage `json:"pretokenizers"`
	Pattern          map[string]string `json:"pattern"`
	Behavior         string            `json:"behavior"`
	Invert           bool              `json:"invert"`
	AddPrefixSpace   *bool             `json:"add_prefix_space"`
	UseRegex         *bool             `json:"use_regex"`
	Replacement      *string           `json:"replacement"`
	PrependScheme    string            `json:"prepend_scheme"`
	Split            *bool             `json:"split"`
	IndividualDigits bool              `json:"individual_digits"`
}

func parsePreTokenizer(raw json.RawMessage, depth int) (preTokenizer, error) {
	c, ok, err := decodeComponent[preTokenizerConfig](raw, depth)
	if !ok || err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		seq, err := parseSequence("pretokenizers", c.Pretokenizers, depth, parsePreTokenizer)
		if len(seq) == 0 || err != nil {
			return nil, err
		}
		return preSeq(seq), nil
	case "Split":
		p, err := parsePattern(c.Pattern)
		if err != nil {
			return nil, fmt.Errorf("type Split: %w", err)
		}
		b, ok := behaviors[c.Behavior]
		if !ok {
			return nil, fmt.Errorf("type Split: behavior %q is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous", c.Behavior)
		}
		return preSplit{p: p, behavior: b, invert: c.Invert}, nil
	case "ByteLevel":
		p := preByteLevel{prefixSpace: c.AddPrefixSpace == nil || *c.AddPrefixSpace}
		if c.UseRegex == nil || *c.UseRegex {
			re, err := parsePattern(map[string]string{"Regex": gpt2Pattern})
			if err != nil {
				return nil, err
			}
			p.re = re
		}
		return p, nil
	case "Metaspace":
		p := preMetaspace{repl: "▁", prepend: "always", words: c.Split == nil || *c.Split}
		if c.Replacement != nil {
			p.repl = *c.Replacement
		}
		if c.PrependScheme != "" {
			p.prepend = c.PrependScheme
		} else if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
			p.prepend = "never"
		}
		if p.repl == "" || p.prepend != "always" && p.prepend != "first" && p.prepend != "never" {
			return nil, fmt.Errorf("type Metaspace: replacement %q / prepend_scheme %q not supported", p.repl, p.prepend)
		}
		return p, nil
	case "Digits":
		return preDigits{individual: c.IndividualDigits}, nil
	case "WhitespaceSplit":
		return preWhitespaceSplit{}, nil
	case "Whitespace":
		re, err := parsePattern(map[string]string{"Regex": `\w+|[^\w\s]+`})
		if err != nil {
			return nil, err
		}
		return preSplit{p: re, behavior: behRemoved, invert: true}, nil
	}
	return nil, fmt.Errorf("type %q is not supported (engine-sim implements Sequence, Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit)", c.Type)
}
