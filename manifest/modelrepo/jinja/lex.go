// Package jinja renders Hugging Face chat templates the way transformers does: Jinja2 with
// trim_blocks and lstrip_blocks, in an immutable sandbox (no attribute starting with "_", no
// mutation of lists or dicts), with the globals chat templates use. Rendering is bounded — a
// depth limit, a step budget, an output-size budget and a context — so a hostile template is an
// error, never a hang, a stack overflow or an out-of-memory.
package jinja

import (
	"fmt"
	"strings"
)

type tokKind int

const (
	tkText tokKind = iota
	tkVarBegin
	tkVarEnd
	tkBlockBegin
	tkBlockEnd
	tkName
	tkString
	tkInt
	tkFloat
	tkOp
	tkEOF
)

type token struct {
	kind tokKind
	val  string
	line int
}

// SyntaxError is a template that does not parse; Line is 1-based.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// lexer splits the source into text and tag tokens, applying the whitespace rules: "-" strips
// all whitespace on that side; trim_blocks drops the first newline after a block or comment tag;
// lstrip_blocks drops spaces and tabs between the start of a line and a block or comment tag
// (unless the tag opens with "+").
type lexer struct {
	src  string
	pos  int
	line int
	toks []token
	// stripNext: the previous tag ended with "-" (strip all) or trim_blocks applies (one newline).
	stripNext, trimNext bool
}

func lex(src string) ([]token, error) {
	l := &lexer{src: src, line: 1}
	for l.pos < len(l.src) {
		i := nextTag(l.src[l.pos:])
		if i < 0 {
			l.text(l.src[l.pos:], false, false)
			l.pos = len(l.src)
			break
		}
		open := l.src[l.pos+i : l.pos+i+2]
		mod := byte(0)
		if l.pos+i+2 < len(l.src) {
			mod = l.src[l.pos+i+2]
		}
		isBlock := open == "{%" || open == "{#"
		l.text(l.src[l.pos:l.pos+i], mod == '-', isBlock && mod != '+')
		l.pos += i + 2
		if mod == '-' || mod == '+' {
			l.pos++
		}
		var err error
		switch open {
		case "{#":
			err = l.comment()
		case "{{":
			err = l.tag(tkVarBegin, tkVarEnd, "}}")
		default:
			err = l.block()
		}
		if err != nil {
			return nil, err
		}
	}
	l.toks = append(l.toks, token{kind: tkEOF, line: l.line})
	return l.toks, nil
}

// nextTag is the index of the next "{{", "{%" or "{#", or -1.
func nextTag(s string) int {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '{' && (s[i+1] == '{' || s[i+1] == '%' || s[i+1] == '#') {
			return i
		}
	}
	return -1
}

// text emits literal text, applying the strip the next tag asks for (rstrip: "-"; lstrip:
// lstrip_blocks), then the pending strip of the previous tag. l.pos is where the text begins.
func (l *lexer) text(s string, rstrip, lstrip bool) {
	line := l.line
	l.line += strings.Count(s, "\n")
	if rstrip {
		s = strings.TrimRight(s, " \t\n\r\v\f")
	} else if lstrip {
		j := strings.LastIndexByte(s, '\n')
		atLineStart := j >= 0 || l.pos == 0 || l.src[l.pos-1] == '\n'
		if atLineStart && strings.Trim(s[j+1:], " \t") == "" {
			s = s[:j+1]
		}
	}
	if l.stripNext {
		s = strings.TrimLeft(s, " \t\n\r\v\f")
	} else if l.trimNext {
		if strings.HasPrefix(s, "\r\n") {
			s = s[2:]
		} else if strings.HasPrefix(s, "\n") {
			s = s[1:]
		}
	}
	l.stripNext, l.trimNext = false, false
	if s != "" {
		l.toks = append(l.toks, token{kind: tkText, val: s, line: line})
	}
}

func (l *lexer) comment() error {
	end := strings.Index(l.src[l.pos:], "#}")
	if end < 0 {
		return &SyntaxError{Line: l.line, Msg: "comment never closed"}
	}
	body := l.src[l.pos : l.pos+end]
	l.line += strings.Count(body, "\n")
	l.pos += end + 2
	if strings.HasSuffix(body, "-") {
		l.stripNext = true
	} else {
		l.trimNext = true
	}
	return nil
}

// block lexes a {% … %} tag; {% raw %} … {% endraw %} becomes text.
func (l *lexer) block() error {
	rest := l.src[l.pos:]
	if t := strings.TrimLeft(rest, " \t\n\r"); strings.HasPrefix(t, "raw") {
		after := strings.TrimLeft(t[3:], " \t\n\r")
		if strings.HasPrefix(after, "%}") || strings.HasPrefix(after, "-%}") {
			return l.raw()
		}
	}
	return l.tag(tkBlockBegin, tkBlockEnd, "%}")
}

func (l *lexer) raw() error {
	close := strings.Index(l.src[l.pos:], "%}")
	strip := l.src[l.pos+close-1] == '-'
	l.pos += close + 2
	for i := l.pos; ; {
		j := strings.Index(l.src[i:], "{%")
		if j < 0 {
			return &SyntaxError{Line: l.line, Msg: "raw block never closed (missing endraw)"}
		}
		k := i + j + 2
		if k < len(l.src) && (l.src[k] == '-' || l.src[k] == '+') {
			k++
		}
		t := strings.TrimLeft(l.src[k:], " \t\n\r")
		if strings.HasPrefix(t, "endraw") {
			body := l.src[l.pos : i+j]
			if strip {
				body = strings.TrimLeft(body, " \t\n\r\v\f")
			}
			if l.src[i+j+2] == '-' {
				body = strings.TrimRight(body, " \t\n\r\v\f")
			}
			if body != "" {
				l.toks = append(l.toks, token{kind: tkText, val: body, line: l.line})
			}
			l.line += strings.Count(l.src[l.pos:i+j], "\n")
			e := strings.Index(t, "%}")
			if e < 0 {
				return &SyntaxError{Line: l.line, Msg: "endraw tag never closed"}
			}
			l.pos = len(l.src) - len(t) + e + 2
			if t[e-1] == '-' {
				l.stripNext = true
			} else {
				l.trimNext = true
			}
			return nil
		}
		i += j + 2
	}
}

// tag lexes the expression tokens of a tag up to its end marker.
func (l *lexer) tag(begin, endKind tokKind, end string) error {
	l.toks = append(l.toks, token{kind: begin, line: l.line})
	depth := 0
	for {
		for l.pos < len(l.src) && strings.IndexByte(" \t\r\n", l.src[l.pos]) >= 0 {
			if l.src[l.pos] == '\n' {
				l.line++
			}
			l.pos++
		}
		rest := l.src[l.pos:]
		if rest == "" {
			return &SyntaxError{Line: l.line, Msg: fmt.Sprintf("tag never closed (missing %q)", end)}
		}
		if depth == 0 && (strings.HasPrefix(rest, end) || strings.HasPrefix(rest, "-"+end) || strings.HasPrefix(rest, "+"+end)) {
			if rest[0] == '-' {
				l.stripNext = true
				l.pos++
			} else if rest[0] == '+' {
				l.pos++
			} else if endKind == tkBlockEnd {
				l.trimNext = true
			}
			l.pos += 2
			l.toks = append(l.toks, token{kind: endKind, line: l.line})
			return nil
		}
		t, n, err := scan(rest)
		if err != nil {
			return &SyntaxError{Line: l.line, Msg: err.Error()}
		}
		t.line = l.line
		l.line += strings.Count(rest[:n], "\n")
		l.pos += n
		if t.kind == tkOp {
			switch t.val {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth--
			}
		}
		l.toks = append(l.toks, t)
	}
}

var ops = []string{"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">", "=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", ";"}

func scan(s string) (token, int, error) {
	c := s[0]
	switch {
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		n := 1
		for n < len(s) && (s[n] == '_' || s[n] >= 'a' && s[n] <= 'z' || s[n] >= 'A' && s[n] <= 'Z' || s[n] >= '0' && s[n] <= '9') {
			n++
		}
		return token{kind: tkName, val: s[:n]}, n, nil
	case c >= '0' && c <= '9':
		n := 0
		for n < len(s) && (s[n] >= '0' && s[n] <= '9' || s[n] == '_') {
			n++
		}
		if n+1 < len(s) && s[n] == '.' && s[n+1] >= '0' && s[n+1] <= '9' {
			n++
			for n < len(s) && (s[n] >= '0' && s[n] <= '9' || s[n] == '_') {
				n++
			}
			if n < len(s) && (s[n] == 'e' || s[n] == 'E') {
				m := n + 1
				if m < len(s) && (s[m] == '+' || s[m] == '-') {
					m++
				}
				if m < len(s) && s[m] >= '0' && s[m] <= '9' {
					n = m
					for n < len(s) && s[n] >= '0' && s[n] <= '9' {
						n++
					}
				}
			}
			return token{kind: tkFloat, val: strings.ReplaceAll(s[:n], "_", "")}, n, nil
		}
		return token{kind: tkInt, val: strings.ReplaceAll(s[:n], "_", "")}, n, nil
	case c == '\'' || c == '"':
		return scanString(s)
	}
	for _, op := range ops {
		if strings.HasPrefix(s, op) {
			return token{kind: tkOp, val: op}, len(op), nil
		}
	}
	return token{}, 0, fmt.Errorf("unexpected character %q", c)
}

// scanString reads a Python string literal with its escapes.
func scanString(s string) (token, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q:
			return token{kind: tkString, val: b.String()}, i + 1, nil
		case c == '\\' && i+1 < len(s):
			i++
			switch e := s[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case '\\', '\'', '"':
				b.WriteByte(e)
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				var r rune
				if i+n >= len(s) {
					return token{}, 0, fmt.Errorf("truncated \\%c escape", e)
				}
				if _, err := fmt.Sscanf(s[i+1:i+1+n], "%x", &r); err != nil {
					return token{}, 0, fmt.Errorf("bad \\%c escape", e)
				}
				b.WriteRune(r)
				i += n
			case '\n':
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return token{}, 0, fmt.Errorf("string literal never closed")
}
