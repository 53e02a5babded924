package modelrepo

import (
	"fmt"
	"strings"
)

// maxJinjaDepth bounds nesting of blocks and expressions, so a hostile template cannot exhaust the
// stack of the recursive-descent parser.
const maxJinjaDepth = 200

// CheckJinjaSyntax parses a Jinja template with jinja2's grammar and returns a *JinjaSyntaxError
// naming the line and column of the first problem, or nil. It does not render anything.
func CheckJinjaSyntax(src, name string) error {
	toks, err := lexJinja(src, name)
	if err != nil {
		return err
	}
	p := &jinjaParser{name: name, toks: toks}
	if _, err := p.body(nil); err != nil {
		return err
	}
	return nil
}

// blockFrame is an open block statement, for "never closed" messages.
type blockFrame struct {
	tag  string
	line int
	col  int
}

type jinjaParser struct {
	name  string
	toks  []jinjaTok
	pos   int
	depth int
	open  []blockFrame
}

func (p *jinjaParser) cur() jinjaTok { return p.toks[p.pos] }

func (p *jinjaParser) peek(n int) jinjaTok {
	if p.pos+n < len(p.toks) {
		return p.toks[p.pos+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *jinjaParser) next() jinjaTok {
	t := p.toks[p.pos]
	if t.kind != tkEOF {
		p.pos++
	}
	return t
}

func (p *jinjaParser) errAt(t jinjaTok, format string, args ...any) error {
	return &JinjaSyntaxError{Name: p.name, Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...)}
}

func (p *jinjaParser) isOp(v string) bool { t := p.cur(); return t.kind == tkOp && t.val == v }

func (p *jinjaParser) isName(v string) bool { t := p.cur(); return t.kind == tkName && t.val == v }

func (p *jinjaParser) skipOp(v string) bool {
	if p.isOp(v) {
		p.next()
		return true
	}
	return false
}

func (p *jinjaParser) skipName(v string) bool {
	if p.isName(v) {
		p.next()
		return true
	}
	return false
}

func (p *jinjaParser) expectOp(v string) error {
	if !p.skipOp(v) {
		return p.errAt(p.cur(), "expected '%s', got %s", v, p.cur().describe())
	}
	return nil
}

func (p *jinjaParser) expectName(v string) error {
	if !p.skipName(v) {
		return p.errAt(p.cur(), "expected '%s', got %s", v, p.cur().describe())
	}
	return nil
}

func (p *jinjaParser) expectIdent() (jinjaTok, error) {
	t := p.cur()
	if t.kind != tkName {
		return t, p.errAt(t, "expected a name, got %s", t.describe())
	}
	return p.next(), nil
}

// openBody ends the tag that opens a block; jinja2 accepts an optional colon before "%}".
func (p *jinjaParser) openBody() error {
	p.skipOp(":")
	return p.expectBlockEnd()
}

func (p *jinjaParser) expectBlockEnd() error {
	if p.cur().kind != tkBlockEnd {
		return p.errAt(p.cur(), "expected end of statement block '%%}', got %s", p.cur().describe())
	}
	p.next()
	return nil
}

func (p *jinjaParser) enter(t jinjaTok) error {
	p.depth++
	if p.depth > maxJinjaDepth {
		return p.errAt(t, "nesting deeper than %d levels", maxJinjaDepth)
	}
	return nil
}

func (p *jinjaParser) leave() { p.depth-- }

// body parses template content until one of the end tags, which it consumes (the caller parses
// the rest of that tag); it returns the end tag found. With no end tags it runs to the end.
func (p *jinjaParser) body(ends []string) (string, error) {
	for {
		t := p.cur()
		switch t.kind {
		case tkData:
			p.next()
		case tkVarBegin:
			p.next()
			if err := p.tuple(tupleOpts{condExpr: true}); err != nil {
				return "", err
			}
			if p.cur().kind != tkVarEnd {
				return "", p.errAt(p.cur(), "expected end of print statement '}}', got %s", p.cur().describe())
			}
			p.next()
		case tkBlockBegin:
			p.next()
			tag := p.cur()
			if tag.kind != tkName {
				return "", p.errAt(tag, "expected a statement name after '{%%', got %s", tag.describe())
			}
			for _, e := range ends {
				if tag.val == e {
					p.next()
					return e, nil
				}
			}
			if err := p.statement(); err != nil {
				return "", err
			}
		case tkEOF:
			if len(ends) == 0 {
				return "", nil
			}
			return "", p.unclosed(t, ends)
		default:
			return "", p.errAt(t, "unexpected %s", t.describe())
		}
	}
}

// unclosed reports a block still open at the end of the template at the line that opened it,
// which is where the fix goes.
func (p *jinjaParser) unclosed(t jinjaTok, ends []string) error {
	f := p.open[len(p.open)-1]
	return p.errAt(jinjaTok{line: f.line, col: f.col}, "the '%s' block opened on line %d is never closed: the template ends (line %d) before %s", f.tag, f.line, t.line, quoteJoin(ends))
}

func quoteJoin(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "'" + s + "'"
	}
	return strings.Join(q, " or ")
}

// block parses the body of a block statement opened by tag and returns the end tag that closed it.
func (p *jinjaParser) block(tag jinjaTok, ends ...string) (string, error) {
	if err := p.enter(tag); err != nil {
		return "", err
	}
	defer p.leave()
	p.open = append(p.open, blockFrame{tag.val, tag.line, tag.col})
	defer func() { p.open = p.open[:len(p.open)-1] }()
	return p.body(ends)
}

// endTag parses the rest of an end tag and its "%}".
func (p *jinjaParser) endTag() error { return p.expectBlockEnd() }

// statement parses one "{% name … %}" whose name is the current token.
func (p *jinjaParser) statement() error {
	open := p.toks[p.pos-1] // the "{%": block errors point at the start of the tag
	tag := p.next()
	tag.line, tag.col = open.line, open.col
	switch tag.val {
	case "if":
		return p.ifStmt(tag)
	case "for":
		return p.forStmt(tag)
	case "set":
		return p.setStmt(tag)
	case "macro":
		return p.macroStmt(tag)
	case "call":
		return p.callStmt(tag)
	case "filter":
		return p.filterStmt(tag)
	case "with":
		return p.withStmt(tag)
	case "block":
		return p.blockStmt(tag)
	case "autoescape":
		if err := p.expression(true); err != nil {
			return err
		}
		return p.simpleBlock(tag, "endautoescape")
	case "print":
		for first := true; p.cur().kind != tkBlockEnd; first = false {
			if !first {
				if err := p.expectOp(","); err != nil {
					return err
				}
			}
			if err := p.expression(true); err != nil {
				return err
			}
		}
		return p.expectBlockEnd()
	case "generation": // transformers' AssistantTracker extension
		return p.simpleBlock(tag, "endgeneration")
	case "extends":
		if err := p.expression(true); err != nil {
			return err
		}
		return p.expectBlockEnd()
	case "include":
		return p.includeStmt()
	case "import":
		return p.importStmt()
	case "from":
		return p.fromStmt()
	case "break", "continue": // jinja2.ext.loopcontrols, which transformers enables
		if !p.inLoop() {
			return p.errAt(tag, "'%s' outside of a for loop", tag.val)
		}
		return p.expectBlockEnd()
	}
	return p.errAt(tag, "unknown statement '%s'%s", tag.val, p.expectedHint())
}

// expectedHint tells, for a stray end tag, which block is open.
func (p *jinjaParser) expectedHint() string {
	if len(p.open) == 0 {
		return ""
	}
	f := p.open[len(p.open)-1]
	return fmt.Sprintf(" (the innermost open block is '%s' from line %d)", f.tag, f.line)
}

func (p *jinjaParser) inLoop() bool {
	for i := len(p.open) - 1; i >= 0; i-- {
		switch p.open[i].tag {
		case "for":
			return true
		case "macro", "call":
			return false
		}
	}
	return false
}

func (p *jinjaParser) simpleBlock(tag jinjaTok, end string) error {
	if err := p.openBody(); err != nil {
		return err
	}
	if _, err := p.block(tag, end); err != nil {
		return err
	}
	return p.endTag()
}

func (p *jinjaParser) ifStmt(tag jinjaTok) error {
	for {
		if err := p.tuple(tupleOpts{}); err != nil {
			return err
		}
		if err := p.openBody(); err != nil {
			return err
		}
		end, err := p.block(tag, "elif", "else", "endif")
		if err != nil {
			return err
		}
		switch end {
		case "elif":
			continue
		case "else":
			if err := p.openBody(); err != nil {
				return err
			}
			if _, err := p.block(tag, "endif"); err != nil {
				return err
			}
		}
		return p.endTag()
	}
}

func (p *jinjaParser) forStmt(tag jinjaTok) error {
	if err := p.assignTarget(assignOpts{endNames: []string{"in"}}); err != nil {
		return err
	}
	if err := p.expectName("in"); err != nil {
		return err
	}
	if err := p.tuple(tupleOpts{endNames: []string{"recursive"}}); err != nil {
		return err
	}
	if p.skipName("if") {
		if err := p.expression(true); err != nil {
			return err
		}
	}
	p.skipName("recursive")
	if err := p.openBody(); err != nil {
		return err
	}
	end, err := p.block(tag, "endfor", "else")
	if err != nil {
		return err
	}
	if end == "else" {
		if err := p.openBody(); err != nil {
			return err
		}
		// the else body runs when the loop did not iterate: break/continue do not apply there
		if _, err := p.block(jinjaTok{val: "for-else", line: tag.line}, "endfor"); err != nil {
			return err
		}
	}
	return p.endTag()
}

func (p *jinjaParser) setStmt(tag jinjaTok) error {
	if err := p.assignTarget(assignOpts{withNamespace: true}); err != nil {
		return err
	}
	if p.skipOp("=") {
		if err := p.tuple(tupleOpts{condExpr: true}); err != nil {
			return err
		}
		return p.expectBlockEnd()
	}
	// block set: {% set x | filter %}…{% endset %}
	if p.isOp("|") {
		if err := p.filterChain(); err != nil {
			return err
		}
	}
	return p.simpleBlock(tag, "endset")
}

func (p *jinjaParser) macroStmt(tag jinjaTok) error {
	if _, err := p.expectIdent(); err != nil {
		return err
	}
	if err := p.signature(); err != nil {
		return err
	}
	return p.simpleBlock(tag, "endmacro")
}

func (p *jinjaParser) callStmt(tag jinjaTok) error {
	if p.isOp("(") {
		if err := p.signature(); err != nil {
			return err
		}
	}
	start := p.cur()
	if err := p.expression(true); err != nil {
		return err
	}
	if prev := p.toks[p.pos-1]; prev.kind != tkOp || prev.val != ")" {
		return p.errAt(start, "expected a call after 'call'")
	}
	return p.simpleBlock(tag, "endcall")
}

func (p *jinjaParser) filterStmt(tag jinjaTok) error {
	if err := p.filterBody(); err != nil {
		return err
	}
	for p.skipOp("|") {
		if err := p.filterBody(); err != nil {
			return err
		}
	}
	return p.simpleBlock(tag, "endfilter")
}

func (p *jinjaParser) withStmt(tag jinjaTok) error {
	for first := true; p.cur().kind != tkBlockEnd && !p.isOp(":"); first = false {
		if !first {
			if err := p.expectOp(","); err != nil {
				return err
			}
		}
		if err := p.assignTarget(assignOpts{}); err != nil {
			return err
		}
		if err := p.expectOp("="); err != nil {
			return err
		}
		if err := p.expression(true); err != nil {
			return err
		}
	}
	return p.simpleBlock(tag, "endwith")
}

func (p *jinjaParser) blockStmt(tag jinjaTok) error {
	if _, err := p.expectIdent(); err != nil {
		return err
	}
	p.skipName("scoped")
	p.skipName("required")
	if err := p.openBody(); err != nil {
		return err
	}
	if _, err := p.block(tag, "endblock"); err != nil {
		return err
	}
	if p.cur().kind == tkName {
		p.next()
	}
	return p.endTag()
}

func (p *jinjaParser) contextModifier() {
	if (p.isName("with") || p.isName("without")) && p.peek(1).kind == tkName && p.peek(1).val == "context" {
		p.next()
		p.next()
	}
}

func (p *jinjaParser) includeStmt() error {
	if err := p.expression(true); err != nil {
		return err
	}
	if p.isName("ignore") && p.peek(1).kind == tkName && p.peek(1).val == "missing" {
		p.next()
		p.next()
	}
	p.contextModifier()
	return p.expectBlockEnd()
}

func (p *jinjaParser) importStmt() error {
	if err := p.expression(true); err != nil {
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

func (p *jinjaParser) fromStmt() error {
	if err := p.expression(true); err != nil {
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
func (p *jinjaParser) signature() error {
	if err := p.expectOp("("); err != nil {
		return err
	}
	defaults := false
	for first := true; !p.skipOp(")"); first = false {
		if !first {
			if err := p.expectOp(","); err != nil {
				return err
			}
		}
		arg, err := p.expectIdent()
		if err != nil {
			return err
		}
		if p.skipOp("=") {
			defaults = true
			if err := p.expression(true); err != nil {
				return err
			}
		} else if defaults {
			return p.errAt(arg, "non-default argument '%s' follows default argument", arg.val)
		}
	}
	return nil
}

// jinjaConstants are names jinja2 parses as literals, which cannot be assigned to.
var jinjaConstants = map[string]bool{"true": true, "false": true, "none": true, "True": true, "False": true, "None": true}

type assignOpts struct {
	endNames      []string
	withNamespace bool
}

// assignTarget parses a name, "ns.attr", or a tuple of names.
func (p *jinjaParser) assignTarget(o assignOpts) error {
	t := p.cur()
	if o.withNamespace && t.kind == tkName && p.peek(1).kind == tkOp && p.peek(1).val == "." {
		p.next()
		p.next()
		_, err := p.expectIdent()
		return err
	}
	paren := p.skipOp("(")
	n := 0
	for {
		if n > 0 {
			if !p.skipOp(",") {
				break
			}
			if p.isTupleEnd(o.endNames) || (paren && p.isOp(")")) {
				break
			}
		}
		if p.isOp("(") {
			if err := p.enter(p.cur()); err != nil {
				return err
			}
			err := p.assignTarget(assignOpts{endNames: o.endNames})
			p.leave()
			if err != nil {
				return err
			}
		} else if c := p.cur(); c.kind != tkName || jinjaConstants[c.val] {
			return p.errAt(c, "cannot assign to %s", c.describe())
		} else {
			p.next()
		}
		n++
	}
	if paren {
		return p.expectOp(")")
	}
	return nil
}

type tupleOpts struct {
	condExpr bool
	endNames []string
	explicit bool // inside parentheses: "()" is an empty tuple
}

func (p *jinjaParser) isTupleEnd(endNames []string) bool {
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

// tuple parses an expression or a comma-separated tuple of expressions.
func (p *jinjaParser) tuple(o tupleOpts) error {
	n := 0
	for {
		if n > 0 && !p.skipOp(",") {
			break
		}
		if p.isTupleEnd(o.endNames) {
			break
		}
		if err := p.expression(o.condExpr); err != nil {
			return err
		}
		n++
		if !p.isOp(",") {
			break
		}
	}
	if n == 0 && !o.explicit {
		return p.errAt(p.cur(), "expected an expression, got %s", p.cur().describe())
	}
	return nil
}

// expression parses a full expression, with "a if b else c" when condExpr is set.
func (p *jinjaParser) expression(condExpr bool) error {
	if err := p.enter(p.cur()); err != nil {
		return err
	}
	defer p.leave()
	if err := p.or(); err != nil {
		return err
	}
	for condExpr && p.skipName("if") {
		if err := p.or(); err != nil {
			return err
		}
		if p.skipName("else") {
			return p.expression(true)
		}
	}
	return nil
}

func (p *jinjaParser) or() error {
	if err := p.and(); err != nil {
		return err
	}
	for p.skipName("or") {
		if err := p.and(); err != nil {
			return err
		}
	}
	return nil
}

func (p *jinjaParser) and() error {
	if err := p.not(); err != nil {
		return err
	}
	for p.skipName("and") {
		if err := p.not(); err != nil {
			return err
		}
	}
	return nil
}

func (p *jinjaParser) not() error {
	if p.isName("not") {
		t := p.next()
		if err := p.enter(t); err != nil {
			return err
		}
		defer p.leave()
		return p.not()
	}
	return p.compare()
}

var compareOps = map[string]bool{"==": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true}

func (p *jinjaParser) compare() error {
	if err := p.binary(0); err != nil {
		return err
	}
	for {
		t := p.cur()
		switch {
		case t.kind == tkOp && compareOps[t.val]:
			p.next()
		case t.kind == tkName && t.val == "in":
			p.next()
		case t.kind == tkName && t.val == "not" && p.peek(1).kind == tkName && p.peek(1).val == "in":
			p.next()
			p.next()
		default:
			return nil
		}
		if err := p.binary(0); err != nil {
			return err
		}
	}
}

// binaryLevels are jinja2's arithmetic precedence levels, loosest first.
var binaryLevels = [][]string{{"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}}

func (p *jinjaParser) binary(level int) error {
	if level == len(binaryLevels) {
		return p.unary(true)
	}
	if err := p.binary(level + 1); err != nil {
		return err
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
			return nil
		}
		p.next()
		if err := p.binary(level + 1); err != nil {
			return err
		}
	}
}

func (p *jinjaParser) unary(withFilter bool) error {
	if p.isOp("-") || p.isOp("+") {
		t := p.next()
		if err := p.enter(t); err != nil {
			return err
		}
		err := p.unary(false)
		p.leave()
		if err != nil {
			return err
		}
	} else {
		if err := p.primary(); err != nil {
			return err
		}
	}
	if err := p.postfix(); err != nil {
		return err
	}
	if withFilter {
		return p.filterExpr()
	}
	return nil
}

func (p *jinjaParser) primary() error {
	t := p.cur()
	switch t.kind {
	case tkName, tkInt, tkFloat:
		p.next()
		return nil
	case tkString:
		for p.cur().kind == tkString { // adjacent literals concatenate
			p.next()
		}
		return nil
	case tkOp:
		switch t.val {
		case "(":
			p.next()
			if err := p.enter(t); err != nil {
				return err
			}
			defer p.leave()
			if err := p.tuple(tupleOpts{condExpr: true, explicit: true}); err != nil {
				return err
			}
			return p.expectOp(")")
		case "[":
			p.next()
			return p.items(t, "]", false)
		case "{":
			p.next()
			return p.items(t, "}", true)
		}
	}
	return p.errAt(t, "unexpected %s", t.describe())
}

// items parses list or dict items up to the closing bracket; a trailing comma is allowed.
func (p *jinjaParser) items(open jinjaTok, closing string, dict bool) error {
	if err := p.enter(open); err != nil {
		return err
	}
	defer p.leave()
	for first := true; !p.skipOp(closing); first = false {
		if !first {
			if err := p.expectOp(","); err != nil {
				return err
			}
			if p.skipOp(closing) {
				return nil
			}
		}
		if err := p.expression(true); err != nil {
			return err
		}
		if dict {
			if err := p.expectOp(":"); err != nil {
				return err
			}
			if err := p.expression(true); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *jinjaParser) postfix() error {
	for {
		switch {
		case p.isOp("."):
			p.next()
			if t := p.cur(); t.kind != tkName && t.kind != tkInt {
				return p.errAt(t, "expected an attribute name after '.', got %s", t.describe())
			}
			p.next()
		case p.isOp("["):
			if err := p.subscript(); err != nil {
				return err
			}
		case p.isOp("("):
			if err := p.callArgs(); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

func (p *jinjaParser) filterExpr() error {
	for {
		switch {
		case p.isOp("|"):
			p.next()
			if err := p.filterBody(); err != nil {
				return err
			}
		case p.isName("is"):
			if err := p.test(); err != nil {
				return err
			}
		case p.isOp("("):
			if err := p.callArgs(); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// filterChain parses "| f | g(…)".
func (p *jinjaParser) filterChain() error {
	for p.skipOp("|") {
		if err := p.filterBody(); err != nil {
			return err
		}
	}
	return nil
}

// filterBody parses a filter name (dotted) and its optional arguments.
func (p *jinjaParser) filterBody() error {
	if _, err := p.expectIdent(); err != nil {
		return err
	}
	for p.skipOp(".") {
		if _, err := p.expectIdent(); err != nil {
			return err
		}
	}
	if p.isOp("(") {
		return p.callArgs()
	}
	return nil
}

// test parses "is [not] name [args | single argument]".
func (p *jinjaParser) test() error {
	p.next() // is
	p.skipName("not")
	if _, err := p.expectIdent(); err != nil {
		return err
	}
	for p.skipOp(".") {
		if _, err := p.expectIdent(); err != nil {
			return err
		}
	}
	t := p.cur()
	switch {
	case p.isOp("("):
		return p.callArgs()
	case t.kind == tkName && (t.val == "else" || t.val == "or" || t.val == "and"):
		return nil
	case t.kind == tkName && t.val == "is":
		return p.errAt(t, "cannot chain multiple tests with 'is'")
	case t.kind == tkName || t.kind == tkString || t.kind == tkInt || t.kind == tkFloat || p.isOp("[") || p.isOp("{"):
		if err := p.primary(); err != nil {
			return err
		}
		return p.postfix()
	}
	return nil
}

// subscript parses "[…]" with slices and comma-separated indices.
func (p *jinjaParser) subscript() error {
	open := p.next()
	if err := p.enter(open); err != nil {
		return err
	}
	defer p.leave()
	for first := true; !p.skipOp("]"); first = false {
		if !first {
			if err := p.expectOp(","); err != nil {
				return err
			}
		}
		if err := p.subscribed(); err != nil {
			return err
		}
	}
	return nil
}

// subscribed parses one index or a slice "[start]:[stop][:[step]]".
func (p *jinjaParser) subscribed() error {
	part := func() error {
		if p.isOp(":") || p.isOp("]") || p.isOp(",") {
			return nil
		}
		return p.expression(true)
	}
	if err := part(); err != nil {
		return err
	}
	for i := 0; i < 2 && p.skipOp(":"); i++ {
		if err := part(); err != nil {
			return err
		}
	}
	if p.isOp(":") {
		return p.errAt(p.cur(), "a slice takes at most three parts")
	}
	return nil
}

// callArgs parses "(a, b, k=v, *args, **kwargs)"; a trailing comma is allowed.
func (p *jinjaParser) callArgs() error {
	open := p.next()
	if err := p.enter(open); err != nil {
		return err
	}
	defer p.leave()
	named := false
	for first := true; !p.skipOp(")"); first = false {
		if !first {
			if err := p.expectOp(","); err != nil {
				return err
			}
			if p.skipOp(")") {
				return nil
			}
		}
		switch t := p.cur(); {
		case p.isOp("**"), p.isOp("*"):
			p.next()
			named = true
		case t.kind == tkName && p.peek(1).kind == tkOp && p.peek(1).val == "=":
			p.next()
			p.next()
			named = true
		case named:
			return p.errAt(t, "positional argument after a keyword argument")
		}
		if err := p.expression(true); err != nil {
			return err
		}
	}
	return nil
}
