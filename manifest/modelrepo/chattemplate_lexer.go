package modelrepo

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file and chattemplate_parser.go are a syntax checker for Jinja templates that follows the
// grammar of Python's jinja2 — what vLLM (through transformers) compiles chat templates with — as
// closely as a checker needs: same delimiters, whitespace-control markers, token rules, statements
// and expression grammar, plus the two extensions transformers enables (loop controls and
// {% generation %}). It gives the lint its line-and-column syntax messages; rendering is
// manifest/modelrepo/jinja's.

// jinjaTokKind is the kind of a lexed Jinja token.
type jinjaTokKind int

const (
	tkData       jinjaTokKind = iota // literal template text
	tkVarBegin                       // {{
	tkVarEnd                         // }}
	tkBlockBegin                     // {%
	tkBlockEnd                       // %}
	tkName
	tkString
	tkInt
	tkFloat
	tkOp // operator or punctuation; the text is in val
	tkEOF
)

type jinjaTok struct {
	kind jinjaTokKind
	val  string
	line int
	col  int
}

// describe names a token the way an error message should show it.
func (t jinjaTok) describe() string {
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
	case tkData:
		return "template data"
	case tkString:
		return "string literal"
	}
	return fmt.Sprintf("'%s'", t.val)
}

// JinjaSyntaxError is a template syntax error with its 1-based position.
type JinjaSyntaxError struct {
	Name string // file (and template name) the template came from
	Line int
	Col  int
	Msg  string
}

func (e *JinjaSyntaxError) Error() string {
	return fmt.Sprintf("%s: line %d, column %d: %s", e.Name, e.Line, e.Col, e.Msg)
}

// operators of jinja2's lexer, longest first so "//" wins over "/".
var jinjaOperators = []string{"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"}

// jinjaLexer splits a template into tokens. Positions are tracked as it goes.
type jinjaLexer struct {
	name string
	src  string
	pos  int
	line int
	col  int
	toks []jinjaTok
}

func (l *jinjaLexer) errAt(line, col int, format string, args ...any) error {
	return &JinjaSyntaxError{Name: l.name, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// advance moves pos forward n bytes, keeping line and column.
func (l *jinjaLexer) advance(n int) {
	for _, r := range l.src[l.pos : l.pos+n] {
		if r == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
	}
	l.pos += n
}

func (l *jinjaLexer) emit(kind jinjaTokKind, val string, line, col int) {
	l.toks = append(l.toks, jinjaTok{kind: kind, val: val, line: line, col: col})
}

// lexJinja tokenizes src. It fails on what jinja2's lexer fails on: unclosed comments, tags and
// raw blocks, unterminated strings, unexpected characters and unbalanced brackets inside tags.
func lexJinja(src, name string) ([]jinjaTok, error) {
	l := &jinjaLexer{name: name, src: src, line: 1, col: 1}
	for l.pos < len(l.src) {
		i := nextOpener(l.src[l.pos:])
		if i < 0 {
			l.emit(tkData, l.src[l.pos:], l.line, l.col)
			l.advance(len(l.src) - l.pos)
			break
		}
		if i > 0 {
			l.emit(tkData, l.src[l.pos:l.pos+i], l.line, l.col)
			l.advance(i)
		}
		var err error
		switch l.src[l.pos+1] {
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

// skipMarker consumes an optional whitespace-control marker ("-" or "+") after an opener.
func (l *jinjaLexer) skipMarker() {
	if l.pos < len(l.src) && (l.src[l.pos] == '-' || l.src[l.pos] == '+') {
		l.advance(1)
	}
}

func (l *jinjaLexer) comment() error {
	line, col := l.line, l.col
	end := strings.Index(l.src[l.pos+2:], "#}")
	if end < 0 {
		return l.errAt(line, col, "comment opened here is never closed (missing '#}')")
	}
	l.advance(2 + end + 2)
	return nil
}

// rawBlock reports whether a "{% raw %}" tag starts at pos.
func (l *jinjaLexer) rawBlock() bool {
	s := l.src[l.pos+2:]
	s = strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+"), " \t\r\n")
	if !strings.HasPrefix(s, "raw") {
		return false
	}
	s = strings.TrimLeft(s[3:], " \t\r\n")
	return strings.HasPrefix(s, "%}") || strings.HasPrefix(s, "-%}")
}

// raw consumes "{% raw %}…{% endraw %}" as data.
func (l *jinjaLexer) raw() error {
	line, col := l.line, l.col
	open := strings.Index(l.src[l.pos:], "%}")
	l.advance(open + 2)
	start := l.pos
	for off := 0; ; {
		i := strings.Index(l.src[start+off:], "{%")
		if i < 0 {
			return l.errAt(line, col, "raw block opened here is never closed (missing '{%% endraw %%}')")
		}
		at := start + off + i
		s := strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(l.src[at+2:], "-"), "+"), " \t\r\n")
		if strings.HasPrefix(s, "endraw") {
			rest := strings.TrimLeft(s[len("endraw"):], " \t\r\n")
			if !strings.HasPrefix(rest, "%}") && !strings.HasPrefix(rest, "-%}") {
				break
			}
			l.emit(tkData, l.src[start:at], l.line, l.col)
			l.advance(at - l.pos)
			close := strings.Index(l.src[l.pos:], "%}")
			l.advance(close + 2)
			return nil
		}
		off += i + 2
	}
	return l.errAt(line, col, "raw block opened here has a malformed endraw tag")
}

// tag lexes the inside of "{{ … }}" or "{% … %}". End delimiters count only while no bracket is
// open, as in jinja2, so "{{ {'a': {'b': 1}} }}" lexes as a dict.
func (l *jinjaLexer) tag(begin, endKind jinjaTokKind, end string) error {
	line, col := l.line, l.col
	l.emit(begin, l.src[l.pos:l.pos+2], line, col)
	l.advance(2)
	l.skipMarker()
	var stack []jinjaTok
	for {
		for l.pos < len(l.src) && isJinjaSpace(l.src[l.pos]) {
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
			if strings.HasPrefix(rest, end) {
				l.emit(endKind, end, l.line, l.col)
				l.advance(len(end))
				return nil
			}
			if strings.HasPrefix(rest, "-"+end) {
				l.emit(endKind, end, l.line, l.col)
				l.advance(len(end) + 1)
				return nil
			}
		}
		tok, n, err := l.scanToken(rest)
		if err != nil {
			return err
		}
		switch tok.val {
		case "(", "[", "{":
			if tok.kind == tkOp {
				stack = append(stack, tok)
			}
		case ")", "]", "}":
			if tok.kind != tkOp {
				break
			}
			if len(stack) == 0 {
				return l.errAt(tok.line, tok.col, "unexpected '%s'", tok.val)
			}
			want := map[string]string{"(": ")", "[": "]", "{": "}"}[stack[len(stack)-1].val]
			if tok.val != want {
				return l.errAt(tok.line, tok.col, "unexpected '%s', expected '%s'", tok.val, want)
			}
			stack = stack[:len(stack)-1]
		}
		l.toks = append(l.toks, tok)
		l.advance(n)
	}
}

func isJinjaSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f' || b == '\v'
}

// scanToken reads one token inside a tag: a number, a name, a string or an operator.
func (l *jinjaLexer) scanToken(s string) (jinjaTok, int, error) {
	t := jinjaTok{line: l.line, col: l.col}
	afterDot := l.pos > 0 && l.src[l.pos-1] == '.'
	if s[0] >= '0' && s[0] <= '9' {
		n, isFloat := scanNumber(s, !afterDot)
		t.kind, t.val = tkInt, s[:n]
		if isFloat {
			t.kind = tkFloat
		}
		return t, n, nil
	}
	if r, size := utf8.DecodeRuneInString(s); r == '_' || unicode.IsLetter(r) {
		n := size
		for n < len(s) {
			r, size := utf8.DecodeRuneInString(s[n:])
			if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				break
			}
			n += size
		}
		t.kind, t.val = tkName, s[:n]
		return t, n, nil
	}
	if s[0] == '\'' || s[0] == '"' {
		n, ok := scanString(s)
		if !ok {
			return t, 0, l.errAt(t.line, t.col, "string literal starting here is never closed")
		}
		t.kind, t.val = tkString, s[:n]
		return t, n, nil
	}
	for _, op := range jinjaOperators {
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

// scanString returns the length of the quoted string at the start of s, honouring backslash
// escapes; strings may span lines, as in jinja2.
func scanString(s string) (int, bool) {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			return i + 1, true
		}
	}
	return 0, false
}
