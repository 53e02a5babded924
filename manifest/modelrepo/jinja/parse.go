package jinja

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The parser follows the grammar of Python's jinja2 (parser.py) — what vLLM, through
// transformers, compiles chat templates with — statement by statement and precedence level by
// precedence level, plus the two extensions transformers enables (loop controls and
// {% generation %}). It builds the tree the renderer evaluates and fails where jinja2 fails, with
// the line and column of the problem. Constructs jinja2 accepts but the renderer cannot run
// (include, recursive loops, …) parse, and are recorded as the first unsupported construct.

// maxParseDepth bounds nesting of blocks and expressions, so a hostile template cannot exhaust
// the stack of the recursive-descent parser.
const maxParseDepth = 200

// blockFrame is an open block statement, for "never closed" messages and loop controls.
type blockFrame struct {
	tag       string
	line, col int
	loop      bool // break and continue apply inside (a for body, not its else)
}

type parser struct {
	name        string
	toks        []token
	pos         int
	depth       int
	open        []blockFrame
	unsupported *SyntaxError // the first construct the renderer cannot run
}

// parse lexes and parses src. A syntax error is returned as err; a template that parses but
// uses a construct the renderer cannot run comes back with that construct as unsupported.
func parse(src, name string) (nodes []node, unsupported *SyntaxError, err error) {
	toks, err := lex(src, name)
	if err != nil {
		return nil, nil, err
	}
	p := &parser{name: name, toks: toks}
	nodes, _, err = p.body(nil)
	if err != nil {
		return nil, nil, err
	}
	return nodes, p.unsupported, nil
}

func (p *parser) cur() token { return p.toks[p.pos] }

func (p *parser) peek(n int) token {
	if p.pos+n < len(p.toks) {
		return p.toks[p.pos+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tkEOF {
		p.pos++
	}
	return t
}

func (p *parser) errAt(t token, format string, args ...any) error {
	return &SyntaxError{Name: p.name, Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...)}
}

// unsupportedAt records a construct jinja2 accepts and the renderer does not run.
func (p *parser) unsupportedAt(t token, format string, args ...any) {
	if p.unsupported == nil {
		p.unsupported = &SyntaxError{Name: p.name, Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...), Unsupported: true}
	}
}

func (p *parser) isOp(v string) bool { t := p.cur(); return t.kind == tkOp && t.val == v }

func (p *parser) isName(v string) bool { t := p.cur(); return t.kind == tkName && t.val == v }

func (p *parser) skipOp(v string) bool {
	if p.isOp(v) {
		p.next()
		return true
	}
	return false
}

func (p *parser) skipName(v string) bool {
	if p.isName(v) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectOp(v string) error {
	if !p.skipOp(v) {
		return p.errAt(p.cur(), "expected '%s', got %s", v, p.cur().describe())
	}
	return nil
}

func (p *parser) expectName(v string) error {
	if !p.skipName(v) {
		return p.errAt(p.cur(), "expected '%s', got %s", v, p.cur().describe())
	}
	return nil
}

func (p *parser) expectIdent() (token, error) {
	t := p.cur()
	if t.kind != tkName {
		return t, p.errAt(t, "expected a name, got %s", t.describe())
	}
	return p.next(), nil
}

// openBody ends the tag that opens a block; jinja2 accepts an optional colon before "%}".
func (p *parser) openBody() error {
	p.skipOp(":")
	return p.expectBlockEnd()
}

func (p *parser) expectBlockEnd() error {
	if p.cur().kind != tkBlockEnd {
		return p.errAt(p.cur(), "expected end of statement block '%%}', got %s", p.cur().describe())
	}
	p.next()
	return nil
}

func (p *parser) enter(t token) error {
	p.depth++
	if p.depth > maxParseDepth {
		return p.errAt(t, "nesting deeper than %d levels", maxParseDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// body parses template content until one of the end tags, which it consumes (the caller parses
// the rest of that tag) and returns. With no end tags it runs to the end of the template.
func (p *parser) body(ends []string) ([]node, string, error) {
	var out []node
	for {
		t := p.cur()
		switch t.kind {
		case tkText:
			p.next()
			out = append(out, textNode{t.val})
		case tkVarBegin:
			p.next()
			e, err := p.tuple(tupleOpts{withCond: true})
			if err != nil {
				return nil, "", err
			}
			if p.cur().kind != tkVarEnd {
				return nil, "", p.errAt(p.cur(), "expected end of print statement '}}', got %s", p.cur().describe())
			}
			p.next()
			out = append(out, outputNode{e})
		case tkBlockBegin:
			p.next()
			tag := p.cur()
			if tag.kind != tkName {
				return nil, "", p.errAt(tag, "expected a statement name after '{%%', got %s", tag.describe())
			}
			for _, e := range ends {
				if tag.val == e {
					p.next()
					return out, e, nil
				}
			}
			ns, err := p.statement()
			if err != nil {
				return nil, "", err
			}
			out = append(out, ns...)
		case tkEOF:
			if len(ends) == 0 {
				return out, "", nil
			}
			return nil, "", p.unclosed(t, ends)
		default:
			return nil, "", p.errAt(t, "unexpected %s", t.describe())
		}
	}
}

// unclosed reports a block still open at the end of the template at the tag that opened it,
// which is where the fix goes.
func (p *parser) unclosed(t token, ends []string) error {
	f := p.open[len(p.open)-1]
	return p.errAt(token{line: f.line, col: f.col}, "the '%s' block opened on line %d is never closed: the template ends (line %d) before %s", f.tag, f.line, t.line, quoteJoin(ends))
}

func quoteJoin(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "'" + s + "'"
	}
	return strings.Join(q, " or ")
}

// block parses the body of a block statement opened by tag and returns the end tag that closed it.
func (p *parser) block(tag token, loop bool, ends ...string) ([]node, string, error) {
	if err := p.enter(tag); err != nil {
		return nil, "", err
	}
	defer p.leave()
	p.open = append(p.open, blockFrame{tag: tag.val, line: tag.line, col: tag.col, loop: loop})
	defer func() { p.open = p.open[:len(p.open)-1] }()
	return p.body(ends)
}

// simpleBlock parses ":%}", a body up to end, and the end tag's "%}".
func (p *parser) simpleBlock(tag token, end string) ([]node, error) {
	if err := p.openBody(); err != nil {
		return nil, err
	}
	body, _, err := p.block(tag, false, end)
	if err != nil {
		return nil, err
	}
	return body, p.expectBlockEnd()
}

// statement parses one "{% name … %}" whose name is the current token.
func (p *parser) statement() ([]node, error) {
	open := p.toks[p.pos-1] // the "{%": block errors point at the start of the tag
	tag := p.next()
	tag.line, tag.col = open.line, open.col
	one := func(n node, err error) ([]node, error) {
		if err != nil {
			return nil, err
		}
		return []node{n}, nil
	}
	switch tag.val {
	case "if":
		return one(p.ifStmt(tag))
	case "for":
		return one(p.forStmt(tag))
	case "set":
		return one(p.setStmt(tag))
	case "macro":
		return one(p.macroStmt(tag))
	case "call":
		return one(p.callStmt(tag))
	case "filter":
		return one(p.filterStmt(tag))
	case "with":
		p.unsupportedAt(tag, "with blocks are not supported")
		return nil, p.withStmt(tag)
	case "block":
		p.unsupportedAt(tag, "block is not available: chat templates cannot load other templates")
		return nil, p.blockStmt(tag)
	case "autoescape":
		p.unsupportedAt(tag, "autoescape blocks are not supported")
		if _, err := p.expression(true); err != nil {
			return nil, err
		}
		_, err := p.simpleBlock(tag, "endautoescape")
		return nil, err
	case "print":
		var out []node
		for first := true; p.cur().kind != tkBlockEnd; first = false {
			if !first {
				if err := p.expectOp(","); err != nil {
					return nil, err
				}
			}
			e, err := p.expression(true)
			if err != nil {
				return nil, err
			}
			out = append(out, outputNode{e})
		}
		return out, p.expectBlockEnd()
	case "generation": // transformers' AssistantTracker extension: the body renders as it is
		body, err := p.simpleBlock(tag, "endgeneration")
		return one(&ifNode{conds: []expr{&literal{true}}, bodies: [][]node{body}}, err)
	case "extends", "include", "import", "from":
		p.unsupportedAt(tag, "%s is not available: chat templates cannot load other templates", tag.val)
		switch tag.val {
		case "include":
			return nil, p.includeStmt()
		case "import":
			return nil, p.importStmt()
		case "from":
			return nil, p.fromStmt()
		}
		if _, err := p.expression(true); err != nil {
			return nil, err
		}
		return nil, p.expectBlockEnd()
	case "break", "continue": // jinja2.ext.loopcontrols, which transformers enables
		if !p.inLoop() {
			return nil, p.errAt(tag, "'%s' outside of a for loop", tag.val)
		}
		if tag.val == "break" {
			return one(breakNode{}, p.expectBlockEnd())
		}
		return one(continueNode{}, p.expectBlockEnd())
	case "do":
		return nil, p.errAt(tag, "unknown statement 'do' (it needs jinja2.ext.do, which transformers does not load)%s", p.expectedHint())
	}
	return nil, p.errAt(tag, "unknown statement '%s'%s", tag.val, p.expectedHint())
}

// expectedHint tells, for a stray end tag, which block is open.
func (p *parser) expectedHint() string {
	if len(p.open) == 0 {
		return ""
	}
	f := p.open[len(p.open)-1]
	return fmt.Sprintf(" (the innermost open block is '%s' from line %d)", f.tag, f.line)
}

func (p *parser) inLoop() bool {
	for i := len(p.open) - 1; i >= 0; i-- {
		switch f := p.open[i]; {
		case f.loop:
			return true
		case f.tag == "macro", f.tag == "call":
			return false
		}
	}
	return false
}

func (p *parser) ifStmt(tag token) (node, error) {
	n := &ifNode{}
	for {
		c, err := p.tuple(tupleOpts{})
		if err != nil {
			return nil, err
		}
		if err := p.openBody(); err != nil {
			return nil, err
		}
		body, end, err := p.block(tag, false, "elif", "else", "endif")
		if err != nil {
			return nil, err
		}
		n.conds, n.bodies = append(n.conds, c), append(n.bodies, body)
		switch end {
		case "elif":
			continue
		case "else":
			if err := p.openBody(); err != nil {
				return nil, err
			}
			if n.els, _, err = p.block(tag, false, "endif"); err != nil {
				return nil, err
			}
		}
		return n, p.expectBlockEnd()
	}
}

func (p *parser) forStmt(tag token) (node, error) {
	n := &forNode{line: tag.line}
	start := p.cur()
	names, nested, err := p.assignTarget(assignOpts{endNames: []string{"in"}})
	if err != nil {
		return nil, err
	}
	if nested {
		p.unsupportedAt(start, "nested unpacking in a for loop is not supported")
	}
	n.targets = names
	if err := p.expectName("in"); err != nil {
		return nil, err
	}
	if n.iter, err = p.tuple(tupleOpts{endNames: []string{"recursive"}}); err != nil {
		return nil, err
	}
	if p.skipName("if") {
		if n.cond, err = p.expression(true); err != nil {
			return nil, err
		}
	}
	if p.isName("recursive") {
		p.unsupportedAt(p.next(), "recursive loops are not supported")
	}
	if err := p.openBody(); err != nil {
		return nil, err
	}
	body, end, err := p.block(tag, true, "endfor", "else")
	if err != nil {
		return nil, err
	}
	n.body = body
	if end == "else" {
		if err := p.openBody(); err != nil {
			return nil, err
		}
		// the else body runs when the loop did not iterate: break/continue do not apply there
		if n.els, _, err = p.block(tag, false, "endfor"); err != nil {
			return nil, err
		}
	}
	return n, p.expectBlockEnd()
}

func (p *parser) setStmt(tag token) (node, error) {
	n := &setNode{line: tag.line}
	t := p.cur()
	if t.kind == tkName && p.peek(1).kind == tkOp && p.peek(1).val == "." {
		// namespace attribute: {% set ns.attr = … %}
		p.next()
		p.next()
		a, err := p.expectIdent()
		if err != nil {
			return nil, err
		}
		n.target, n.attr = []string{t.val}, a.val
	} else {
		names, nested, err := p.assignTarget(assignOpts{})
		if err != nil {
			return nil, err
		}
		if nested {
			p.unsupportedAt(t, "nested unpacking in a set statement is not supported")
		}
		n.target = names
	}
	if p.skipOp("=") {
		v, err := p.tuple(tupleOpts{withCond: true})
		if err != nil {
			return nil, err
		}
		n.value = v
		return n, p.expectBlockEnd()
	}
	// block set: {% set x | filter %}…{% endset %}
	var f expr
	for p.skipOp("|") {
		var err error
		if f, err = p.filterBody(f); err != nil {
			return nil, err
		}
	}
	if f != nil {
		n.filter = f.(*filterExpr)
	}
	body, err := p.simpleBlock(tag, "endset")
	n.body = body
	return n, err
}

func (p *parser) macroStmt(tag token) (node, error) {
	name, err := p.expectIdent()
	if err != nil {
		return nil, err
	}
	n := &macroNode{name: name.val}
	if n.params, n.defaults, err = p.signature(); err != nil {
		return nil, err
	}
	n.body, err = p.simpleBlock(tag, "endmacro")
	return n, err
}

func (p *parser) callStmt(tag token) (node, error) {
	if p.isOp("(") {
		p.unsupportedAt(p.cur(), "call blocks with caller arguments are not supported")
		if _, _, err := p.signature(); err != nil {
			return nil, err
		}
	}
	start := p.cur()
	e, err := p.expression(true)
	if err != nil {
		return nil, err
	}
	if _, ok := e.(*callExpr); !ok {
		return nil, p.errAt(start, "expected a call after 'call'")
	}
	body, err := p.simpleBlock(tag, "endcall")
	return &callBlockNode{call: e, body: body}, err
}

func (p *parser) filterStmt(tag token) (node, error) {
	f, err := p.filterBody(nil)
	if err != nil {
		return nil, err
	}
	for p.skipOp("|") {
		if f, err = p.filterBody(f); err != nil {
			return nil, err
		}
	}
	body, err := p.simpleBlock(tag, "endfilter")
	return &filterBlockNode{filter: f.(*filterExpr), body: body}, err
}

func (p *parser) withStmt(tag token) error {
	for first := true; p.cur().kind != tkBlockEnd && !p.isOp(":"); first = false {
		if !first {
			if err := p.expectOp(","); err != nil {
				return err
			}
		}
		if _, _, err := p.assignTarget(assignOpts{}); err != nil {
			return err
		}
		if err := p.expectOp("="); err != nil {
			return err
		}
		if _, err := p.expression(true); err != nil {
			return err
		}
	}
	_, err := p.simpleBlock(tag, "endwith")
	return err
}

func (p *parser) blockStmt(tag token) error {
	if _, err := p.expectIdent(); err != nil {
		return err
	}
	p.skipName("scoped")
	p.skipName("required")
	if err := p.openBody(); err != nil {
		return err
	}
	if _, _, err := p.block(tag, false, "endblock"); err != nil {
		return err
	}
	if p.cur().kind == tkName {
		p.next()
	}
	return p.expectBlockEnd()
}

func (p *parser) contextModifier() {
	if (p.isName("with") || p.isName("without")) && p.peek(1).kind == tkName && p.peek(1).val == "context" {
		p.next()
		p.next()
	}
}

func (p *parser) includeStmt() error {
	if _, err := p.expression(true); err != nil {
		return err
	}
	if p.isName("ignore") && p.peek(1).kind == tkName && p.peek(1).val == "missing" {
		p.next()
		p.next()
	}
	p.contextModifier()
	return p.expectBlockEnd()
}

func (p *parser) importStmt() error {
	if _, err := p.expression(true); err != nil {
		return err
	}
	if err := p.expectName("as"); err != nil {
		return err
	}
	if _, err := p.expectIdent(); err != nil {
		return err
	}
	p.contextModifier()
	return p.expectBlockEnd()
}

func (p *parser) fromStmt() error {
	if _, err := p.expression(true); err != nil {
		return err
	}
	if err := p.expectName("import"); err != nil {
		return err
	}
	for first := true; ; first = false {
		if !first && !p.skipOp(",") {
			break
		}
		if p.isName("with") || p.isName("without") {
			break
		}
		if _, err := p.expectIdent(); err != nil {
			return err
		}
		if p.skipName("as") {
			if _, err := p.expectIdent(); err != nil {
				return err
			}
		}
	}
	p.contextModifier()
	return p.expectBlockEnd()
}

// signature parses a macro or call signature: "(a, b=1)". Unlike call arguments, jinja2 allows
// no trailing comma here, and no argument without a default after one with a default.
func (p *parser) signature() ([]string, map[string]expr, error) {
	if err := p.expectOp("("); err != nil {
		return nil, nil, err
	}
	var params []string
	defaults := map[string]expr{}
	for first := true; !p.skipOp(")"); first = false {
		if !first {
			if err := p.expectOp(","); err != nil {
				return nil, nil, err
			}
		}
		arg, err := p.expectIdent()
		if err != nil {
			return nil, nil, err
		}
		params = append(params, arg.val)
		if p.skipOp("=") {
			if defaults[arg.val], err = p.expression(true); err != nil {
				return nil, nil, err
			}
		} else if len(defaults) > 0 {
			return nil, nil, p.errAt(arg, "non-default argument '%s' follows default argument", arg.val)
		}
	}
	return params, defaults, nil
}

// constants are names jinja2 parses as literals, which cannot be assigned to.
var constants = map[string]bool{"true": true, "false": true, "none": true, "True": true, "False": true, "None": true}

type assignOpts struct {
	endNames []string
}

// assignTarget parses a name or a tuple of names, with or without parentheses; nested reports
// a parenthesised tuple inside the tuple, whose names come back flattened.
func (p *parser) assignTarget(o assignOpts) (names []string, nested bool, err error) {
	paren := p.skipOp("(")
	for n := 0; ; n++ {
		if n > 0 {
			if !p.skipOp(",") {
				break
			}
			if p.isTupleEnd(o.endNames) || (paren && p.isOp(")")) {
				break
			}
		}
		if c := p.cur(); c.kind == tkOp && c.val == "(" {
			if err := p.enter(c); err != nil {
				return nil, false, err
			}
			sub, _, err := p.assignTarget(assignOpts{endNames: o.endNames})
			p.leave()
			if err != nil {
				return nil, false, err
			}
			names, nested = append(names, sub...), true
		} else if c.kind != tkName || constants[c.val] {
			return nil, false, p.errAt(c, "cannot assign to %s", c.describe())
		} else {
			p.next()
			names = append(names, c.val)
		}
	}
	if paren {
		return names, nested, p.expectOp(")")
	}
	return names, nested, nil
}

type tupleOpts struct {
	withCond bool // "a if b else c" allowed
	endNames []string
	explicit bool // inside parentheses: "()" is an empty tuple
}

func (p *parser) isTupleEnd(endNames []string) bool {
	t := p.cur()
	switch t.kind {
	case tkVarEnd, tkBlockEnd, tkEOF:
		return true
	case tkOp:
		return t.val == ")"
	case tkName:
		for _, n := range endNames {
			if t.val == n {
				return true
			}
		}
	}
	return false
}

// tuple parses an expression, or a comma-separated tuple of expressions.
func (p *parser) tuple(o tupleOpts) (expr, error) {
	var items []expr
	isTuple := false
	for {
		if len(items) > 0 && !p.skipOp(",") {
			break
		}
		if p.isTupleEnd(o.endNames) {
			break
		}
		e, err := p.expression(o.withCond)
		if err != nil {
			return nil, err
		}
		items = append(items, e)
		if !p.isOp(",") {
			break
		}
		isTuple = true
	}
	switch {
	case isTuple:
		return &tupleExpr{items}, nil
	case len(items) == 1:
		return items[0], nil
	case o.explicit:
		return &tupleExpr{}, nil
	}
	return nil, p.errAt(p.cur(), "expected an expression, got %s", p.cur().describe())
}

// expression parses a full expression, with "a if b else c" when withCond is set.
func (p *parser) expression(withCond bool) (expr, error) {
	if err := p.enter(p.cur()); err != nil {
		return nil, err
	}
	defer p.leave()
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	for withCond && p.skipName("if") {
		c, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.skipName("else") {
			els, err := p.expression(true)
			if err != nil {
				return nil, err
			}
			return &condExpr{then: e, cond: c, els: els}, nil
		}
		e = &condExpr{then: e, cond: c}
	}
	return e, nil
}

func (p *parser) or() (expr, error) {
	a, err := p.and()
	for err == nil && p.isName("or") {
		t := p.next()
		var b expr
		if b, err = p.and(); err == nil {
			a = &binExpr{line: t.line, op: "or", a: a, b: b}
		}
	}
	return a, err
}

func (p *parser) and() (expr, error) {
	a, err := p.not()
	for err == nil && p.isName("and") {
		t := p.next()
		var b expr
		if b, err = p.not(); err == nil {
			a = &binExpr{line: t.line, op: "and", a: a, b: b}
		}
	}
	return a, err
}

func (p *parser) not() (expr, error) {
	if p.isName("not") {
		t := p.next()
		if err := p.enter(t); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{op: "not", x: x}, nil
	}
	return p.compare()
}

func (p *parser) compare() (expr, error) {
	a, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	for {
		t := p.cur()
		var op string
		switch {
		case t.kind == tkOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == "<=" || t.val == ">" || t.val == ">="):
			op = t.val
			p.next()
		case t.kind == tkName && t.val == "in":
			op = "in"
			p.next()
		case t.kind == tkName && t.val == "not" && p.peek(1).kind == tkName && p.peek(1).val == "in":
			op = "not in"
			p.next()
			p.next()
		default:
			return a, nil
		}
		b, err := p.binary(0)
		if err != nil {
			return nil, err
		}
		a = &binExpr{line: t.line, op: op, a: a, b: b}
	}
}

// binaryLevels are jinja2's arithmetic precedence levels, loosest first: parse_math1 (+ -),
// parse_concat (~), parse_math2 (* / // %), parse_pow (**).
var binaryLevels = [][]string{{"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}}

func (p *parser) binary(level int) (expr, error) {
	if level == len(binaryLevels) {
		return p.unary(true)
	}
	a, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		t := p.cur()
		matched := false
		for _, op := range binaryLevels[level] {
			if t.kind == tkOp && t.val == op {
				matched = true
			}
		}
		if !matched {
			return a, nil
		}
		p.next()
		b, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		a = &binExpr{line: t.line, op: t.val, a: a, b: b}
	}
}

// unary parses jinja2's parse_unary: a sign applies to the operand before its filters, so
// "-x | abs" is abs(-x).
func (p *parser) unary(withFilter bool) (expr, error) {
	var x expr
	var err error
	if p.isOp("-") || p.isOp("+") {
		t := p.next()
		if err := p.enter(t); err != nil {
			return nil, err
		}
		inner, err := p.unary(false)
		p.leave()
		if err != nil {
			return nil, err
		}
		x = &unaryExpr{op: t.val, x: inner}
	} else if x, err = p.primary(); err != nil {
		return nil, err
	}
	if x, err = p.postfix(x); err != nil {
		return nil, err
	}
	if withFilter {
		return p.filterExpr(x)
	}
	return x, nil
}

// parseInt reads an integer literal as the lexer found it (underscores, 0b/0o/0x prefixes).
func parseInt(s string) (int64, error) {
	s = strings.ReplaceAll(s, "_", "")
	if len(s) > 1 && s[0] == '0' && strings.ContainsRune("bBoOxX", rune(s[1])) {
		return strconv.ParseInt(s, 0, 64)
	}
	return strconv.ParseInt(s, 10, 64)
}

func (p *parser) primary() (expr, error) {
	t := p.cur()
	switch t.kind {
	case tkName:
		p.next()
		switch t.val {
		case "true", "True":
			return &literal{true}, nil
		case "false", "False":
			return &literal{false}, nil
		case "none", "None":
			return &literal{nil}, nil
		}
		return &nameExpr{line: t.line, name: t.val}, nil
	case tkString:
		s := p.next().val
		for p.cur().kind == tkString { // adjacent literals concatenate
			s += p.next().val
		}
		return &literal{s}, nil
	case tkInt:
		p.next()
		n, err := parseInt(t.val)
		if err != nil {
			p.unsupportedAt(t, "integer %s does not fit in 64 bits", t.val)
		}
		return &literal{n}, nil
	case tkFloat:
		p.next()
		f, err := strconv.ParseFloat(strings.ReplaceAll(t.val, "_", ""), 64)
		if err != nil && !math.IsInf(f, 0) {
			return nil, p.errAt(t, "bad float %s", t.val)
		}
		return &literal{f}, nil
	case tkOp:
		switch t.val {
		case "(":
			p.next()
			if err := p.enter(t); err != nil {
				return nil, err
			}
			defer p.leave()
			e, err := p.tuple(tupleOpts{withCond: true, explicit: true})
			if err != nil {
				return nil, err
			}
			return e, p.expectOp(")")
		case "[":
			p.next()
			items, _, err := p.items(t, "]", false)
			return &listExpr{items}, err
		case "{":
			p.next()
			keys, vals, err := p.items(t, "}", true)
			return &dictExpr{keys: keys, vals: vals}, err
		}
	}
	return nil, p.errAt(t, "unexpected %s", t.describe())
}

// items parses list or dict items up to the closing bracket; a trailing comma is allowed.
func (p *parser) items(open token, closing string, dict bool) (keys, vals []expr, err error) {
	if err := p.enter(open); err != nil {
		return nil, nil, err
	}
	defer p.leave()
	for first := true; !p.skipOp(closing); first = false {
		if !first {
			if err := p.expectOp(","); err != nil {
				return nil, nil, err
			}
			if p.skipOp(closing) {
				break
			}
		}
		k, err := p.expression(true)
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
		if dict {
			if err := p.expectOp(":"); err != nil {
				return nil, nil, err
			}
			v, err := p.expression(true)
			if err != nil {
				return nil, nil, err
			}
			vals = append(vals, v)
		}
	}
	return keys, vals, nil
}

// postfix parses attribute access, subscripts and calls after a primary.
func (p *parser) postfix(x expr) (expr, error) {
	for {
		t := p.cur()
		switch {
		case p.isOp("."):
			p.next()
			a := p.cur()
			switch a.kind {
			case tkName:
				x = &attrExpr{line: t.line, obj: x, name: a.val}
			case tkInt:
				n, err := parseInt(a.val)
				if err != nil {
					p.unsupportedAt(a, "integer %s does not fit in 64 bits", a.val)
				}
				x = &indexExpr{line: t.line, obj: x, key: &literal{n}}
			default:
				return nil, p.errAt(a, "expected an attribute name after '.', got %s", a.describe())
			}
			p.next()
		case p.isOp("["):
			e, err := p.subscript(x)
			if err != nil {
				return nil, err
			}
			x = e
		case p.isOp("("):
			e, err := p.call(x)
			if err != nil {
				return nil, err
			}
			x = e
		default:
			return x, nil
		}
	}
}

// filterExpr parses jinja2's parse_filter_expr: filters, tests and calls after a unary.
func (p *parser) filterExpr(x expr) (expr, error) {
	for {
		var err error
		switch {
		case p.isOp("|"):
			p.next()
			x, err = p.filterBody(x)
		case p.isName("is"):
			x, err = p.test(x)
		case p.isOp("("):
			x, err = p.call(x)
		default:
			return x, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// filterBody parses a filter name (dotted) and its optional arguments, applied to x (nil for
// the first filter of a filter block).
func (p *parser) filterBody(x expr) (expr, error) {
	name, err := p.expectIdent()
	if err != nil {
		return nil, err
	}
	f := &filterExpr{line: name.line, x: x, name: name.val}
	for p.skipOp(".") {
		part, err := p.expectIdent()
		if err != nil {
			return nil, err
		}
		f.name += "." + part.val
	}
	if p.isOp("(") {
		if f.args, f.kwargs, err = p.callArgs(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// test parses "is [not] name [args | single argument]".
func (p *parser) test(x expr) (expr, error) {
	is := p.next()
	te := &testExpr{line: is.line, x: x, negate: p.skipName("not")}
	name, err := p.expectIdent()
	if err != nil {
		return nil, err
	}
	te.name = name.val
	for p.skipOp(".") {
		part, err := p.expectIdent()
		if err != nil {
			return nil, err
		}
		te.name += "." + part.val
	}
	t := p.cur()
	switch {
	case p.isOp("("):
		args, kwargs, err := p.callArgs()
		if err != nil {
			return nil, err
		}
		if len(kwargs) > 0 {
			p.unsupportedAt(t, "keyword arguments to a test are not supported")
		}
		te.args = args
	case t.kind == tkName && (t.val == "else" || t.val == "or" || t.val == "and"):
	case t.kind == tkName && t.val == "is":
		return nil, p.errAt(t, "cannot chain multiple tests with 'is'")
	case t.kind == tkName || t.kind == tkString || t.kind == tkInt || t.kind == tkFloat || p.isOp("[") || p.isOp("{"):
		arg, err := p.primary()
		if err != nil {
			return nil, err
		}
		if arg, err = p.postfix(arg); err != nil {
			return nil, err
		}
		te.args = []expr{arg}
	}
	return te, nil
}

// subscript parses "[…]" with slices and comma-separated indices.
func (p *parser) subscript(obj expr) (expr, error) {
	open := p.next()
	if err := p.enter(open); err != nil {
		return nil, err
	}
	defer p.leave()
	var keys []expr
	for first := true; !p.skipOp("]"); first = false {
		if !first {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		k, err := p.subscribed(open.line)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	if len(keys) != 1 {
		p.unsupportedAt(open, "a subscript with %d indices is not supported", len(keys))
		return &indexExpr{line: open.line, obj: obj, key: &tupleExpr{keys}}, nil
	}
	if s, ok := keys[0].(*sliceExpr); ok {
		s.obj = obj
		return s, nil
	}
	return &indexExpr{line: open.line, obj: obj, key: keys[0]}, nil
}

// subscribed parses one index or a slice "[start]:[stop][:[step]]".
func (p *parser) subscribed(line int) (expr, error) {
	part := func() (expr, error) {
		if p.isOp(":") || p.isOp("]") || p.isOp(",") {
			return nil, nil
		}
		return p.expression(true)
	}
	lo, err := part()
	if err != nil {
		return nil, err
	}
	if !p.skipOp(":") {
		if lo == nil {
			return nil, p.errAt(p.cur(), "expected an expression, got %s", p.cur().describe())
		}
		return lo, nil
	}
	s := &sliceExpr{line: line, lo: lo}
	if s.hi, err = part(); err != nil {
		return nil, err
	}
	if p.skipOp(":") {
		if s.step, err = part(); err != nil {
			return nil, err
		}
	}
	if p.isOp(":") {
		return nil, p.errAt(p.cur(), "a slice takes at most three parts")
	}
	return s, nil
}

func (p *parser) call(fn expr) (expr, error) {
	line := p.cur().line
	args, kwargs, err := p.callArgs()
	if err != nil {
		return nil, err
	}
	return &callExpr{line: line, fn: fn, args: args, kwargs: kwargs}, nil
}

// callArgs parses "(a, b, k=v, *args, **kwargs)"; a trailing comma is allowed.
func (p *parser) callArgs() ([]expr, []kwarg, error) {
	open := p.next()
	if err := p.enter(open); err != nil {
		return nil, nil, err
	}
	defer p.leave()
	var args []expr
	var kwargs []kwarg
	named := false
	for first := true; !p.skipOp(")"); first = false {
		if !first {
			if err := p.expectOp(","); err != nil {
				return nil, nil, err
			}
			if p.skipOp(")") {
				break
			}
		}
		key := ""
		switch t := p.cur(); {
		case p.isOp("**"), p.isOp("*"):
			p.unsupportedAt(t, "%s arguments are not supported", t.val)
			p.next()
			named = true
		case t.kind == tkName && p.peek(1).kind == tkOp && p.peek(1).val == "=":
			p.next()
			p.next()
			key, named = t.val, true
		case named:
			return nil, nil, p.errAt(t, "positional argument after a keyword argument")
		}
		e, err := p.expression(true)
		if err != nil {
			return nil, nil, err
		}
		if key != "" {
			kwargs = append(kwargs, kwarg{key, e})
		} else {
			args = append(args, e)
		}
	}
	return args, kwargs, nil
}
