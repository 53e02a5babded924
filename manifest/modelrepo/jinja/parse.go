package jinja

import (
	"fmt"
	"strconv"
	"strings"
)

// maxParseDepth bounds nesting of blocks and expressions, so the recursive-descent parser
// cannot exhaust the stack.
const maxParseDepth = 200

type parser struct {
	toks  []token
	pos   int
	depth int
}

func parse(src string) ([]node, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	body, end, err := p.body(nil)
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, p.errf("unexpected {%% %s %%}", end)
	}
	return body, nil
}

func (p *parser) cur() token { return p.toks[p.pos] }
func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tkEOF {
		p.pos++
	}
	return t
}
func (p *parser) errf(format string, args ...any) error {
	return &SyntaxError{Line: p.cur().line, Msg: fmt.Sprintf(format, args...)}
}
func (p *parser) isOp(v string) bool   { t := p.cur(); return t.kind == tkOp && t.val == v }
func (p *parser) isName(v string) bool { t := p.cur(); return t.kind == tkName && t.val == v }
func (p *parser) skipOp(v string) bool {
	if p.isOp(v) {
		p.pos++
		return true
	}
	return false
}
func (p *parser) skipName(v string) bool {
	if p.isName(v) {
		p.pos++
		return true
	}
	return false
}
func (p *parser) expectOp(v string) error {
	if !p.skipOp(v) {
		return p.errf("expected %q, got %s", v, describe(p.cur()))
	}
	return nil
}
func (p *parser) expectName(v string) error {
	if !p.skipName(v) {
		return p.errf("expected %q, got %s", v, describe(p.cur()))
	}
	return nil
}
func (p *parser) ident() (string, error) {
	t := p.cur()
	if t.kind != tkName {
		return "", p.errf("expected a name, got %s", describe(t))
	}
	p.pos++
	return t.val, nil
}
func (p *parser) blockEnd() error {
	if p.cur().kind != tkBlockEnd {
		return p.errf("expected end of statement block, got %s", describe(p.cur()))
	}
	p.pos++
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxParseDepth {
		return p.errf("nested more than %d deep", maxParseDepth)
	}
	return nil
}
func (p *parser) leave() { p.depth-- }

func describe(t token) string {
	switch t.kind {
	case tkEOF:
		return "end of template"
	case tkBlockEnd:
		return "end of statement block"
	case tkVarEnd:
		return "end of print statement"
	case tkText:
		return "template data"
	}
	return strconv.Quote(t.val)
}

// body parses nodes until one of the end tags (returned, its block-begin and name consumed) or
// the end of the template (returns "").
func (p *parser) body(ends []string) ([]node, string, error) {
	if err := p.enter(); err != nil {
		return nil, "", err
	}
	defer p.leave()
	var out []node
	for {
		t := p.cur()
		switch t.kind {
		case tkEOF:
			if len(ends) > 0 {
				return nil, "", p.errf("unexpected end of template, expected %s", strings.Join(ends, " or "))
			}
			return out, "", nil
		case tkText:
			p.pos++
			out = append(out, textNode{t.val})
		case tkVarBegin:
			p.pos++
			e, err := p.expression()
			if err != nil {
				return nil, "", err
			}
			if p.cur().kind != tkVarEnd {
				return nil, "", p.errf("expected end of print statement, got %s", describe(p.cur()))
			}
			p.pos++
			out = append(out, outputNode{e})
		case tkBlockBegin:
			p.pos++
			name := p.cur()
			if name.kind != tkName {
				return nil, "", p.errf("expected a statement name, got %s", describe(name))
			}
			for _, e := range ends {
				if name.val == e {
					p.pos++
					return out, e, nil
				}
			}
			n, err := p.statement()
			if err != nil {
				return nil, "", err
			}
			if n != nil {
				out = append(out, n)
			}
		default:
			return nil, "", p.errf("unexpected %s", describe(t))
		}
	}
}

func (p *parser) statement() (node, error) {
	t := p.next()
	switch t.val {
	case "if":
		return p.ifStmt()
	case "for":
		return p.forStmt(t.line)
	case "set":
		return p.setStmt(t.line)
	case "macro":
		return p.macroStmt()
	case "call":
		return p.callStmt()
	case "filter":
		return p.filterStmt()
	case "generation":
		// transformers' AssistantTracker extension: the body renders as it is.
		if err := p.blockEnd(); err != nil {
			return nil, err
		}
		body, _, err := p.body([]string{"endgeneration"})
		if err != nil {
			return nil, err
		}
		return &ifNode{conds: []expr{&literal{true}}, bodies: [][]node{body}}, p.blockEnd()
	case "break", "continue":
		if err := p.blockEnd(); err != nil {
			return nil, err
		}
		if t.val == "break" {
			return breakNode{}, nil
		}
		return continueNode{}, nil
	case "do":
		return nil, p.errf("the do statement needs jinja2.ext.do, which transformers does not load")
	case "include", "import", "from", "extends", "block":
		return nil, p.errf("%s is not available: chat templates cannot load other templates", t.val)
	}
	return nil, &SyntaxError{Line: t.line, Msg: fmt.Sprintf("unknown tag %q", t.val)}
}

func (p *parser) ifStmt() (node, error) {
	n := &ifNode{}
	for {
		c, err := p.expression()
		if err != nil {
			return nil, err
		}
		if err := p.blockEnd(); err != nil {
			return nil, err
		}
		body, end, err := p.body([]string{"elif", "else", "endif"})
		if err != nil {
			return nil, err
		}
		n.conds, n.bodies = append(n.conds, c), append(n.bodies, body)
		switch end {
		case "elif":
			continue
		case "else":
			if err := p.blockEnd(); err != nil {
				return nil, err
			}
			if n.els, _, err = p.body([]string{"endif"}); err != nil {
				return nil, err
			}
		}
		return n, p.blockEnd()
	}
}

func (p *parser) forStmt(line int) (node, error) {
	n := &forNode{line: line}
	for {
		name, err := p.ident()
		if err != nil {
			return nil, err
		}
		n.targets = append(n.targets, name)
		if !p.skipOp(",") {
			break
		}
	}
	if err := p.expectName("in"); err != nil {
		return nil, err
	}
	var err error
	if n.iter, err = p.expressionNoCond(); err != nil {
		return nil, err
	}
	if p.skipName("if") {
		if n.cond, err = p.expressionNoCond(); err != nil {
			return nil, err
		}
	}
	if p.isName("recursive") {
		return nil, p.errf("recursive loops are not supported")
	}
	if err := p.blockEnd(); err != nil {
		return nil, err
	}
	body, end, err := p.body([]string{"else", "endfor"})
	if err != nil {
		return nil, err
	}
	n.body = body
	if end == "else" {
		if err := p.blockEnd(); err != nil {
			return nil, err
		}
		if n.els, _, err = p.body([]string{"endfor"}); err != nil {
			return nil, err
		}
	}
	return n, p.blockEnd()
}

func (p *parser) setStmt(line int) (node, error) {
	n := &setNode{line: line}
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	n.target = []string{name}
	if p.skipOp(".") {
		if n.attr, err = p.ident(); err != nil {
			return nil, err
		}
	}
	for n.attr == "" && p.skipOp(",") {
		name, err := p.ident()
		if err != nil {
			return nil, err
		}
		n.target = append(n.target, name)
	}
	if p.cur().kind == tkBlockEnd && len(n.target) == 1 && n.attr == "" {
		p.pos++
		if n.body, _, err = p.body([]string{"endset"}); err != nil {
			return nil, err
		}
		return n, p.blockEnd()
	}
	if err := p.expectOp("="); err != nil {
		return nil, err
	}
	if n.value, err = p.tupleOrExpr(); err != nil {
		return nil, err
	}
	return n, p.blockEnd()
}

func (p *parser) macroStmt() (node, error) {
	n := &macroNode{defaults: map[string]expr{}}
	var err error
	if n.name, err = p.ident(); err != nil {
		return nil, err
	}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	for !p.skipOp(")") {
		if len(n.params) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.skipOp(")") {
				break
			}
		}
		name, err := p.ident()
		if err != nil {
			return nil, err
		}
		n.params = append(n.params, name)
		if p.skipOp("=") {
			if n.defaults[name], err = p.expression(); err != nil {
				return nil, err
			}
		}
	}
	if err := p.blockEnd(); err != nil {
		return nil, err
	}
	if n.body, _, err = p.body([]string{"endmacro"}); err != nil {
		return nil, err
	}
	return n, p.blockEnd()
}

func (p *parser) callStmt() (node, error) {
	if p.isOp("(") {
		return nil, p.errf("call blocks with caller arguments are not supported")
	}
	e, err := p.expression()
	if err != nil {
		return nil, err
	}
	if _, ok := e.(*callExpr); !ok {
		return nil, p.errf("expected a macro call after {%% call")
	}
	if err := p.blockEnd(); err != nil {
		return nil, err
	}
	body, _, err := p.body([]string{"endcall"})
	if err != nil {
		return nil, err
	}
	return &callBlockNode{call: e, body: body}, p.blockEnd()
}

func (p *parser) filterStmt() (node, error) {
	f, err := p.filterTail(nil)
	if err != nil {
		return nil, err
	}
	if err := p.blockEnd(); err != nil {
		return nil, err
	}
	body, _, err := p.body([]string{"endfilter"})
	if err != nil {
		return nil, err
	}
	return &filterBlockNode{filter: f, body: body}, p.blockEnd()
}

// tupleOrExpr parses "a, b" as a tuple (set statements), else one expression.
func (p *parser) tupleOrExpr() (expr, error) {
	e, err := p.expression()
	if err != nil || !p.isOp(",") {
		return e, err
	}
	items := []expr{e}
	for p.skipOp(",") {
		if p.cur().kind == tkBlockEnd {
			break
		}
		e, err := p.expression()
		if err != nil {
			return nil, err
		}
		items = append(items, e)
	}
	return &tupleExpr{items}, nil
}

// expression: a conditional expression ("a if c else b") or below.
func (p *parser) expression() (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	for p.skipName("if") {
		c, err := p.or()
		if err != nil {
			return nil, err
		}
		var els expr
		if p.skipName("else") {
			if els, err = p.expression(); err != nil {
				return nil, err
			}
		}
		e = &condExpr{then: e, cond: c, els: els}
	}
	return e, nil
}

// expressionNoCond is an expression without a trailing conditional (for-loop iterables).
func (p *parser) expressionNoCond() (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	return p.or()
}

func (p *parser) or() (expr, error) {
	a, err := p.and()
	for err == nil && p.isName("or") {
		line := p.next().line
		var b expr
		if b, err = p.and(); err == nil {
			a = &binExpr{line: line, op: "or", a: a, b: b}
		}
	}
	return a, err
}

func (p *parser) and() (expr, error) {
	a, err := p.not()
	for err == nil && p.isName("and") {
		line := p.next().line
		var b expr
		if b, err = p.not(); err == nil {
			a = &binExpr{line: line, op: "and", a: a, b: b}
		}
	}
	return a, err
}

func (p *parser) not() (expr, error) {
	if p.skipName("not") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.not()
		return &unaryExpr{op: "not", x: x}, err
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
		case t.kind == tkOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == ">" || t.val == "<=" || t.val == ">="):
			op = t.val
			p.pos++
		case p.isName("in"):
			op = "in"
			p.pos++
		case p.isName("not") && p.peekName(1, "in"):
			op = "not in"
			p.pos += 2
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

func (p *parser) peekName(n int, v string) bool {
	if p.pos+n >= len(p.toks) {
		return false
	}
	t := p.toks[p.pos+n]
	return t.kind == tkName && t.val == v
}

// binary levels, loosest first: ~, + -, * / // %, **.
var binLevels = [][]string{{"~"}, {"+", "-"}, {"*", "/", "//", "%"}, {"**"}}

func (p *parser) binary(level int) (expr, error) {
	if level == len(binLevels) {
		return p.unary()
	}
	a, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		t := p.cur()
		found := false
		for _, op := range binLevels[level] {
			if t.kind == tkOp && t.val == op {
				found = true
			}
		}
		if !found {
			return a, nil
		}
		p.pos++
		b, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		a = &binExpr{line: t.line, op: t.val, a: a, b: b}
	}
}

func (p *parser) unary() (expr, error) {
	if p.isOp("-") || p.isOp("+") {
		op := p.next().val
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.unary()
		return &unaryExpr{op: op, x: x}, err
	}
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	return p.postfix(x)
}

func (p *parser) primary() (expr, error) {
	t := p.next()
	switch t.kind {
	case tkName:
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
		s := t.val
		for p.cur().kind == tkString { // adjacent literals concatenate
			s += p.next().val
		}
		return &literal{s}, nil
	case tkInt:
		n, err := strconv.ParseInt(t.val, 10, 64)
		if err != nil {
			return nil, &SyntaxError{Line: t.line, Msg: fmt.Sprintf("integer %s out of range", t.val)}
		}
		return &literal{n}, nil
	case tkFloat:
		f, err := strconv.ParseFloat(t.val, 64)
		if err != nil {
			return nil, &SyntaxError{Line: t.line, Msg: fmt.Sprintf("bad float %s", t.val)}
		}
		return &literal{f}, nil
	case tkOp:
		switch t.val {
		case "(":
			if p.skipOp(")") {
				return &tupleExpr{}, nil
			}
			e, err := p.expression()
			if err != nil {
				return nil, err
			}
			if p.isOp(",") {
				items := []expr{e}
				for p.skipOp(",") && !p.isOp(")") {
					e, err := p.expression()
					if err != nil {
						return nil, err
					}
					items = append(items, e)
				}
				e = &tupleExpr{items}
			}
			return e, p.expectOp(")")
		case "[":
			var items []expr
			for !p.skipOp("]") {
				if len(items) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.skipOp("]") {
						break
					}
				}
				e, err := p.expression()
				if err != nil {
					return nil, err
				}
				items = append(items, e)
			}
			return &listExpr{items}, nil
		case "{":
			d := &dictExpr{}
			for !p.skipOp("}") {
				if len(d.keys) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.skipOp("}") {
						break
					}
				}
				k, err := p.expression()
				if err != nil {
					return nil, err
				}
				if err := p.expectOp(":"); err != nil {
					return nil, err
				}
				v, err := p.expression()
				if err != nil {
					return nil, err
				}
				d.keys, d.vals = append(d.keys, k), append(d.vals, v)
			}
			return d, nil
		}
	}
	p.pos--
	return nil, p.errf("unexpected %s", describe(t))
}

func (p *parser) postfix(x expr) (expr, error) {
	for {
		t := p.cur()
		switch {
		case p.isOp("."):
			p.pos++
			nt := p.next()
			if nt.kind == tkInt {
				n, _ := strconv.ParseInt(nt.val, 10, 64)
				x = &indexExpr{line: t.line, obj: x, key: &literal{n}}
				continue
			}
			if nt.kind != tkName {
				p.pos--
				return nil, p.errf("expected an attribute name, got %s", describe(nt))
			}
			x = &attrExpr{line: t.line, obj: x, name: nt.val}
		case p.isOp("["):
			p.pos++
			e, err := p.subscript(t.line, x)
			if err != nil {
				return nil, err
			}
			x = e
		case p.isOp("("):
			p.pos++
			args, kwargs, err := p.callArgs()
			if err != nil {
				return nil, err
			}
			x = &callExpr{line: t.line, fn: x, args: args, kwargs: kwargs}
		case p.isOp("|"):
			p.pos++
			f, err := p.filterTail(x)
			if err != nil {
				return nil, err
			}
			x = f
		case p.isName("is"):
			p.pos++
			te := &testExpr{line: t.line, x: x, negate: p.skipName("not")}
			name, err := p.testName()
			if err != nil {
				return nil, err
			}
			te.name = name
			if p.skipOp("(") {
				args, _, err := p.callArgs()
				if err != nil {
					return nil, err
				}
				te.args = args
			} else if c := p.cur(); c.kind == tkString || c.kind == tkInt || c.kind == tkFloat || c.kind == tkName && !isKeyword(c.val) {
				arg, err := p.primary()
				if err != nil {
					return nil, err
				}
				te.args = []expr{arg}
			}
			return te, nil
		default:
			return x, nil
		}
	}
}

func isKeyword(s string) bool {
	switch s {
	case "and", "or", "not", "in", "is", "if", "else":
		return true
	}
	return false
}

func (p *parser) testName() (string, error) {
	t := p.cur()
	if t.kind == tkName || t.kind == tkOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == ">" || t.val == "<=" || t.val == ">=") {
		p.pos++
		return t.val, nil
	}
	return "", p.errf("expected a test name, got %s", describe(t))
}

func (p *parser) filterTail(x expr) (*filterExpr, error) {
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	f := &filterExpr{line: p.cur().line, x: x, name: name}
	if p.skipOp("(") {
		if f.args, f.kwargs, err = p.callArgs(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (p *parser) subscript(line int, obj expr) (expr, error) {
	var parts [3]expr
	colons := 0
	for !p.skipOp("]") {
		if p.skipOp(":") {
			colons++
			if colons > 2 {
				return nil, p.errf("too many ':' in a subscript")
			}
			continue
		}
		e, err := p.expression()
		if err != nil {
			return nil, err
		}
		parts[colons] = e
		if !p.isOp(":") && !p.isOp("]") {
			return nil, p.errf("expected ':' or ']', got %s", describe(p.cur()))
		}
	}
	if colons == 0 {
		if parts[0] == nil {
			return nil, p.errf("empty subscript")
		}
		return &indexExpr{line: line, obj: obj, key: parts[0]}, nil
	}
	return &sliceExpr{line: line, obj: obj, lo: parts[0], hi: parts[1], step: parts[2]}, nil
}

func (p *parser) callArgs() ([]expr, []kwarg, error) {
	var args []expr
	var kwargs []kwarg
	for !p.skipOp(")") {
		if len(args)+len(kwargs) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, nil, err
			}
			if p.skipOp(")") {
				break
			}
		}
		if t := p.cur(); t.kind == tkName && p.pos+1 < len(p.toks) && p.toks[p.pos+1].kind == tkOp && p.toks[p.pos+1].val == "=" {
			p.pos += 2
			v, err := p.expression()
			if err != nil {
				return nil, nil, err
			}
			kwargs = append(kwargs, kwarg{t.val, v})
			continue
		}
		if len(kwargs) > 0 {
			return nil, nil, p.errf("positional argument follows keyword argument")
		}
		e, err := p.expression()
		if err != nil {
			return nil, nil, err
		}
		args = append(args, e)
	}
	return args, kwargs, nil
}
