package jinja

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokKind int

const (
	tkText       tokKind = iota // literal template text, after whitespace control
	tkVarBegin                  // {{
	tkVarEnd                    // }}
	tkBlockBegin                // {%
	tkBlockEnd                  // %}
	tkName
	tkString // val is the decoded value
	tkInt    // val is the literal as written
	tkFloat
	tkOp // operator or punctuation; the text is in val
	tkEOF
)

// token is a lexed token with the 1-based line and column (in runes) where it starts.
type token struct {
	kind tokKind
	val  string
	line int
	col  int
}

// describe names a token the way an error message shows it.
func (t token) describe() string {
	switch t.kind {
	case tkEOF:
		return "end of template"
	case tkVarEnd:
		return "end of print statement '}}'"
	case tkBlockEnd:
		return "end of statement block '%}'"
	case tkVarBegin:
		return "'{{'"
	case tkBlockBegin:
		return "'{%'"
	case tkText:
		return "template data"
	case tkString:
		return "string literal"
	}
	return fmt.Sprintf("'%s'", t.val)
}

// ErrUnsupported marks a template jinja2 compiles but this renderer cannot run (a recursive loop,
// a call block with caller arguments, include, …); it says nothing against the template.
var ErrUnsupported = errors.New("the Go Jinja renderer does not support this construct (jinja2 does)")

// SyntaxError is the one error the lexer and parser return: a template that does not compile
// (or, with Unsupported, one the renderer cannot run), with the 1-based line and column of the
// problem. Name is the file (or label) the template came from, when the caller gave one.
type SyntaxError struct {
	Name        string
	Line        int
	Col         int
	Msg         string
	Unsupported bool // jinja2 accepts it; the renderer does not (the error wraps ErrUnsupported)
}

func (e *SyntaxError) Error() string {
	s := fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
	if e.Name != "" {
		s = e.Name + ":" + s
	}
	if e.Unsupported {
		s += ": " + ErrUnsupported.Error()
	}
	return s
}

// Unwrap makes errors.Is(err, ErrUnsupported) hold for an unsupported construct.
func (e *SyntaxError) Unwrap() error {
	if e.Unsupported {
		return ErrUnsupported
	}
	return nil
}

// operators of jinja2's lexer, longest first so "//" wins over "/".
var operators = []string{"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"}

// lexer splits a template into tokens with jinja2's rules and transformers' whitespace settings:
// "-" strips all whitespace on that side of a tag; trim_blocks drops the first newline after a
// block or comment tag; lstrip_blocks drops spaces and tabs between the start of a line and a
// block or comment tag (unless the tag opens with "+"). Positions are tracked as it goes.
type lexer struct {
	name string
	src  string
	pos  int
	line int
	col  int
	toks []token
	// stripNext: the previous tag ended with "-"; trimNext: trim_blocks applies to the next text.
	stripNext, trimNext bool
}

func (l *lexer) errAt(line, col int, format string, args ...any) error {
	return &SyntaxError{Name: l.name, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// advance moves pos forward n bytes, keeping line and column (columns count runes).
func (l *lexer) advance(n int) {
	for _, c := range []byte(l.src[l.pos : l.pos+n]) {
		switch {
		case c == '\n':
			l.line++
			l.col = 1
		case c&0xC0 != 0x80: // not a UTF-8 continuation byte
			l.col++
		}
	}
	l.pos += n
}

func (l *lexer) emit(kind tokKind, val string, line, col int) {
	l.toks = append(l.toks, token{kind: kind, val: val, line: line, col: col})
}

// lex tokenizes src. It fails on what jinja2's lexer fails on: unclosed comments, tags and raw
// blocks, unterminated strings and bad escapes, unexpected characters and unbalanced brackets
// inside tags.
func lex(src, name string) ([]token, error) {
	l := &lexer{name: name, src: src, line: 1, col: 1, toks: make([]token, 0, len(src)/6+1)}
	for l.pos < len(l.src) {
		i := nextOpener(l.src[l.pos:])
		if i < 0 {
			l.text(len(l.src)-l.pos, false, false)
			break
		}
		open := l.src[l.pos+i+1]
		mod := byte(0)
		if l.pos+i+2 < len(l.src) {
			mod = l.src[l.pos+i+2]
		}
		isBlock := open == '%' || open == '#'
		l.text(i, mod == '-', isBlock && mod != '+')
		var err error
		switch open {
		case '#':
			err = l.comment()
		case '%':
			if l.rawBlock() {
				err = l.raw()
			} else {
				err = l.tag(tkBlockBegin, tkBlockEnd, "%}")
			}
		case '{':
			err = l.tag(tkVarBegin, tkVarEnd, "}}")
		}
		if err != nil {
			return nil, err
		}
	}
	l.emit(tkEOF, "", l.line, l.col)
	return l.toks, nil
}

// nextOpener finds the next "{{", "{%" or "{#".
func nextOpener(s string) int {
	off := 0
	for {
		i := strings.IndexByte(s[off:], '{')
		if i < 0 || off+i+1 >= len(s) {
			return -1
		}
		switch s[off+i+1] {
		case '{', '%', '#':
			return off + i
		}
		off += i + 1
	}
}

// text emits the n bytes of literal text at pos, applying the strip the next tag asks for
// (rstrip: "-"; lstrip: lstrip_blocks), then the pending strip of the previous tag.
func (l *lexer) text(n int, rstrip, lstrip bool) {
	start, line, col := l.pos, l.line, l.col
	s := l.src[start : start+n]
	l.advance(n)
	if rstrip {
		s = strings.TrimRight(s, " \t\n\r\v\f")
	} else if lstrip {
		j := strings.LastIndexByte(s, '\n')
		atLineStart := j >= 0 || start == 0 || l.src[start-1] == '\n'
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
		l.emit(tkText, s, line, col)
	}
}

// skipMarker consumes an optional whitespace-control marker ("-" or "+") after an opener.
func (l *lexer) skipMarker() {
	if l.pos < len(l.src) && (l.src[l.pos] == '-' || l.src[l.pos] == '+') {
		l.advance(1)
	}
}

func (l *lexer) comment() error {
	line, col := l.line, l.col
	from := l.pos + 2
	if from < len(l.src) && (l.src[from] == '-' || l.src[from] == '+') {
		from++
	}
	end := strings.Index(l.src[from:], "#}")
	if end < 0 {
		return l.errAt(line, col, "comment opened here is never closed (missing '#}')")
	}
	if strings.HasSuffix(l.src[from:from+end], "-") {
		l.stripNext = true
	} else {
		l.trimNext = true
	}
	l.advance(from + end + 2 - l.pos)
	return nil
}

// afterMarker drops an optional "-" or "+" and then whitespace from the front of s.
func afterMarker(s string) string {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	return strings.TrimLeft(s, " \t\r\n")
}

// isTagEnd reports whether s starts with "%}", "-%}" or "+%}".
func isTagEnd(s string) bool {
	return strings.HasPrefix(s, "%}") || strings.HasPrefix(s, "-%}") || strings.HasPrefix(s, "+%}")
}

// rawBlock reports whether a "{% raw %}" tag starts at pos.
func (l *lexer) rawBlock() bool {
	s := afterMarker(l.src[l.pos+2:])
	if !strings.HasPrefix(s, "raw") {
		return false
	}
	return isTagEnd(strings.TrimLeft(s[3:], " \t\r\n"))
}

// raw consumes "{% raw %}…{% endraw %}" as text.
func (l *lexer) raw() error {
	line, col := l.line, l.col
	open := strings.Index(l.src[l.pos:], "%}")
	strip := l.src[l.pos+open-1] == '-'
	l.advance(open + 2)
	start := l.pos
	for off := 0; ; {
		i := strings.Index(l.src[start+off:], "{%")
		if i < 0 {
			return l.errAt(line, col, "raw block opened here is never closed (missing '{%% endraw %%}')")
		}
		at := start + off + i
		s := afterMarker(l.src[at+2:])
		if strings.HasPrefix(s, "endraw") {
			rest := strings.TrimLeft(s[len("endraw"):], " \t\r\n")
			if !isTagEnd(rest) {
				break
			}
			body := l.src[start:at]
			if strip {
				body = strings.TrimLeft(body, " \t\n\r\v\f")
			}
			if l.src[at+2] == '-' {
				body = strings.TrimRight(body, " \t\n\r\v\f")
			}
			if body != "" {
				l.emit(tkText, body, l.line, l.col)
			}
			l.advance(at - l.pos)
			close := strings.Index(l.src[l.pos:], "%}")
			switch l.src[l.pos+close-1] {
			case '-':
				l.stripNext = true
			case '+':
			default:
				l.trimNext = true
			}
			l.advance(close + 2)
			return nil
		}
		off += i + 2
	}
	return l.errAt(line, col, "raw block opened here has a malformed endraw tag")
}

// tag lexes "{{ … }}" or "{% … %}". End delimiters count only while no bracket is open, as in
// jinja2, so "{{ {'a': {'b': 1}} }}" lexes as a dict. A block may end with "+%}" (no
// trim_blocks); a print statement may not.
func (l *lexer) tag(begin, endKind tokKind, end string) error {
	line, col := l.line, l.col
	l.emit(begin, "", line, col)
	l.advance(2)
	l.skipMarker()
	var stack []token
	for {
		for l.pos < len(l.src) && isSpace(l.src[l.pos]) {
			l.advance(1)
		}
		if l.pos >= len(l.src) {
			if len(stack) > 0 {
				o := stack[len(stack)-1]
				return l.errAt(o.line, o.col, "'%s' is never closed", o.val)
			}
			return l.errAt(line, col, "tag opened here is never closed (missing '%s')", end)
		}
		rest := l.src[l.pos:]
		if len(stack) == 0 {
			switch {
			case strings.HasPrefix(rest, end):
				l.emit(endKind, end, l.line, l.col)
				l.advance(len(end))
				l.trimNext = endKind == tkBlockEnd
				return nil
			case strings.HasPrefix(rest, "-") && strings.HasPrefix(rest[1:], end):
				l.emit(endKind, end, l.line, l.col)
				l.advance(len(end) + 1)
				l.stripNext = true
				return nil
			case endKind == tkBlockEnd && strings.HasPrefix(rest, "+") && strings.HasPrefix(rest[1:], end):
				l.emit(endKind, end, l.line, l.col)
				l.advance(len(end) + 1)
				return nil
			}
		}
		tok, n, err := l.scanToken(rest)
		if err != nil {
			return err
		}
		if tok.kind == tkOp {
			switch tok.val {
			case "(", "[", "{":
				stack = append(stack, tok)
			case ")", "]", "}":
				if len(stack) == 0 {
					return l.errAt(tok.line, tok.col, "unexpected '%s'", tok.val)
				}
				if want := closer(stack[len(stack)-1].val); tok.val != want {
					return l.errAt(tok.line, tok.col, "unexpected '%s', expected '%s'", tok.val, want)
				}
				stack = stack[:len(stack)-1]
			}
		}
		l.toks = append(l.toks, tok)
		l.advance(n)
	}
}

func closer(open string) string {
	switch open {
	case "(":
		return ")"
	case "[":
		return "]"
	}
	return "}"
}

func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f' || b == '\v'
}

// scanToken reads one token inside a tag: a number, a name, a string or an operator.
func (l *lexer) scanToken(s string) (token, int, error) {
	t := token{line: l.line, col: l.col}
	afterDot := l.pos > 0 && l.src[l.pos-1] == '.'
	c := s[0]
	if c >= '0' && c <= '9' {
		n, isFloat := scanNumber(s, !afterDot)
		t.kind, t.val = tkInt, s[:n]
		if isFloat {
			t.kind = tkFloat
		}
		return t, n, nil
	}
	if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf {
		n := 0
		for n < len(s) {
			if b := s[n]; b < utf8.RuneSelf {
				if b != '_' && !(b >= 'a' && b <= 'z') && !(b >= 'A' && b <= 'Z') && !(b >= '0' && b <= '9' && n > 0) {
					break
				}
				n++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[n:])
			if !unicode.IsLetter(r) && !(n > 0 && unicode.IsDigit(r)) {
				break
			}
			n += size
		}
		if n > 0 {
			t.kind, t.val = tkName, s[:n]
			return t, n, nil
		}
	}
	if c == '\'' || c == '"' {
		v, n, msg := scanString(s)
		if msg != "" {
			return t, 0, l.errAt(t.line, t.col, "%s", msg)
		}
		t.kind, t.val = tkString, v
		return t, n, nil
	}
	for _, op := range operators {
		if strings.HasPrefix(s, op) {
			t.kind, t.val = tkOp, op
			return t, len(op), nil
		}
	}
	r, _ := utf8.DecodeRuneInString(s)
	return t, 0, l.errAt(t.line, t.col, "unexpected character %q", r)
}

// scanNumber returns the length of the integer or float at the start of s (jinja2's rules:
// underscores between digits, 0b/0o/0x prefixes, fractions and exponents). Floats are not
// recognised right after a dot, so "a.0.1" is two integer subscripts.
func scanNumber(s string, allowFloat bool) (int, bool) {
	digits := func(i int, ok func(byte) bool) int {
		for i < len(s) && (ok(s[i]) || (s[i] == '_' && i+1 < len(s) && ok(s[i+1]))) {
			i++
		}
		return i
	}
	dec := func(b byte) bool { return b >= '0' && b <= '9' }
	if len(s) > 2 && s[0] == '0' {
		var ok func(byte) bool
		switch s[1] | 0x20 {
		case 'b':
			ok = func(b byte) bool { return b == '0' || b == '1' }
		case 'o':
			ok = func(b byte) bool { return b >= '0' && b <= '7' }
		case 'x':
			ok = func(b byte) bool { return dec(b) || (b|0x20 >= 'a' && b|0x20 <= 'f') }
		}
		if ok != nil {
			i := 2
			if s[i] == '_' {
				i++
			}
			if i < len(s) && ok(s[i]) {
				return digits(i, ok), false
			}
		}
	}
	n := digits(0, dec)
	if !allowFloat {
		return n, false
	}
	isFloat := false
	if n+1 < len(s) && s[n] == '.' && dec(s[n+1]) {
		n = digits(n+1, dec)
		isFloat = true
	}
	if n < len(s) && s[n]|0x20 == 'e' {
		i := n + 1
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i < len(s) && dec(s[i]) {
			n = digits(i, dec)
			isFloat = true
		}
	}
	return n, isFloat
}

// scanString reads the quoted string at the start of s and decodes its Python escapes; strings
// may span lines, as in jinja2. It returns the value and the length, or a message.
func scanString(s string) (string, int, string) {
	q := s[0]
	end := -1
	plain := true
	for i := 1; i < len(s); i++ {
		if s[i] == '\\' {
			plain = false
			i++
			continue
		}
		if s[i] == q {
			end = i
			break
		}
	}
	if end < 0 {
		return "", 0, "string literal starting here is never closed"
	}
	if plain {
		return s[1:end], end + 1, ""
	}
	var b strings.Builder
	body := s[1:end]
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' || i+1 == len(body) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := body[i]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"':
			b.WriteByte(e)
		case '\n':
		case '0', '1', '2', '3', '4', '5', '6', '7':
			r, j := rune(e-'0'), i+1
			for ; j < len(body) && j < i+3 && body[j] >= '0' && body[j] <= '7'; j++ {
				r = r*8 + rune(body[j]-'0')
			}
			b.WriteRune(r)
			i = j - 1
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			var r rune
			if i+n >= len(body) {
				return "", 0, fmt.Sprintf("truncated \\%c escape in string literal", e)
			}
			for _, h := range []byte(body[i+1 : i+1+n]) {
				d := hexDigit(h)
				if d < 0 {
					return "", 0, fmt.Sprintf("truncated \\%c escape in string literal", e)
				}
				r = r*16 + rune(d)
			}
			if r > unicode.MaxRune {
				return "", 0, fmt.Sprintf("\\%c escape out of range in string literal", e)
			}
			b.WriteRune(r)
			i += n
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String(), end + 1, ""
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c|0x20 >= 'a' && c|0x20 <= 'f':
		return int(c|0x20-'a') + 10
	}
	return -1
}
