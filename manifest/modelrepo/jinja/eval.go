package jinja

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Limits bound one render. Zero fields take the defaults.
type Limits struct {
	// MaxDepth bounds macro calls and nested evaluation (default 100), so recursion is an error,
	// not a Go stack overflow.
	MaxDepth int
	// MaxSteps bounds evaluation steps — nodes and expressions evaluated, loop iterations, items
	// built (default 10,000,000), so fan-out recursion and huge loops stop.
	MaxSteps int64
	// MaxOutput bounds the rendered size and every string or list built on the way (default 1 MiB).
	MaxOutput int
}

// ErrLimit is wrapped by the errors of a render that hit a limit.
var ErrLimit = errors.New("template exceeded a render limit")

// ErrRaised is wrapped by the error of raise_exception().
var ErrRaised = errors.New("raise_exception")

type scope struct {
	vars   map[string]any
	parent *scope
}

func (s *scope) lookup(name string) (any, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

type interp struct {
	ctx    context.Context
	lim    Limits
	steps  int64
	depth  int
	out    *strings.Builder
	global *scope
}

var (
	errBreak    = errors.New("break")
	errContinue = errors.New("continue")
)

func (it *interp) step(n int64) error {
	it.steps += n
	if it.steps > it.lim.MaxSteps {
		return fmt.Errorf("more than %d evaluation steps (a loop or recursion that never ends?): %w", it.lim.MaxSteps, ErrLimit)
	}
	if it.steps&1023 == 0 {
		if err := it.ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (it *interp) enter() error {
	it.depth++
	if it.depth > it.lim.MaxDepth {
		return fmt.Errorf("nested more than %d calls deep (unbounded recursion?): %w", it.lim.MaxDepth, ErrLimit)
	}
	return nil
}

func (it *interp) leave() { it.depth-- }

// checkSize refuses a string or list of n bytes/items beyond the output budget.
func (it *interp) checkSize(n int) error {
	if n > it.lim.MaxOutput {
		return fmt.Errorf("a value of %d bytes exceeds the %d-byte output budget: %w", n, it.lim.MaxOutput, ErrLimit)
	}
	return nil
}

func (it *interp) write(s string) error {
	if it.out.Len()+len(s) > it.lim.MaxOutput {
		return fmt.Errorf("rendered output exceeds %d bytes: %w", it.lim.MaxOutput, ErrLimit)
	}
	it.out.WriteString(s)
	return nil
}

func (it *interp) exec(nodes []node, sc *scope) error {
	for _, n := range nodes {
		if err := it.step(1); err != nil {
			return err
		}
		if err := it.execOne(n, sc); err != nil {
			return err
		}
	}
	return nil
}

func (it *interp) execOne(n node, sc *scope) error {
	switch x := n.(type) {
	case textNode:
		return it.write(x.s)
	case outputNode:
		v, err := it.eval(x.e, sc)
		if err != nil {
			return err
		}
		return it.write(str(v))
	case *ifNode:
		for i, c := range x.conds {
			v, err := it.eval(c, sc)
			if err != nil {
				return err
			}
			if truthy(v) {
				return it.exec(x.bodies[i], sc)
			}
		}
		return it.exec(x.els, sc)
	case *forNode:
		return it.execFor(x, sc)
	case *setNode:
		return it.execSet(x, sc)
	case *macroNode:
		sc.vars[x.name] = it.macro(x, sc)
		return nil
	case *callBlockNode:
		return it.execCallBlock(x, sc)
	case *filterBlockNode:
		s, err := it.capture(x.body, sc)
		if err != nil {
			return err
		}
		v, err := it.applyFilterChain(x.filter, s, sc)
		if err != nil {
			return err
		}
		return it.write(str(v))
	case breakNode:
		return errBreak
	case continueNode:
		return errContinue
	}
	return fmt.Errorf("internal: unknown node %T", n)
}

// applyFilterChain applies the filters of a filter block or block set to v, first to last.
func (it *interp) applyFilterChain(f *filterExpr, v any, sc *scope) (any, error) {
	if prev, ok := f.x.(*filterExpr); ok {
		var err error
		if v, err = it.applyFilterChain(prev, v, sc); err != nil {
			return nil, err
		}
	}
	return it.applyFilter(f, v, sc)
}

// capture renders nodes into a string instead of the output.
func (it *interp) capture(nodes []node, sc *scope) (string, error) {
	saved := it.out
	var b strings.Builder
	it.out = &b
	err := it.exec(nodes, sc)
	it.out = saved
	if err != nil {
		return "", err
	}
	if err := it.checkSize(saved.Len() + b.Len()); err != nil {
		return "", err
	}
	return b.String(), nil
}

func (it *interp) execSet(x *setNode, sc *scope) error {
	var v any
	var err error
	if x.value == nil {
		v, err = it.capture(x.body, sc)
		if err == nil && x.filter != nil {
			v, err = it.applyFilterChain(x.filter, v, sc)
		}
	} else {
		v, err = it.eval(x.value, sc)
	}
	if err != nil {
		return err
	}
	if x.attr != "" {
		obj, _ := sc.lookup(x.target[0])
		ns, ok := obj.(*namespace)
		if !ok {
			return fmt.Errorf("line %d: cannot assign attribute on non-namespace object %s", x.line, x.target[0])
		}
		ns.d.Set(x.attr, v)
		return nil
	}
	if len(x.target) == 1 {
		sc.vars[x.target[0]] = v
		return nil
	}
	items, err := it.iterate(v)
	if err != nil {
		return fmt.Errorf("line %d: %v", x.line, err)
	}
	if len(items) != len(x.target) {
		return fmt.Errorf("line %d: cannot unpack %d values into %d names", x.line, len(items), len(x.target))
	}
	for i, name := range x.target {
		sc.vars[name] = items[i]
	}
	return nil
}

func (it *interp) execFor(x *forNode, sc *scope) error {
	seq, err := it.eval(x.iter, sc)
	if err != nil {
		return err
	}
	items, err := it.iterate(seq)
	if err != nil {
		return fmt.Errorf("line %d: %v", x.line, err)
	}
	if x.cond != nil {
		var kept []any
		for _, item := range items {
			inner := &scope{vars: map[string]any{}, parent: sc}
			if err := bindTargets(inner, x.targets, item); err != nil {
				return fmt.Errorf("line %d: %v", x.line, err)
			}
			c, err := it.eval(x.cond, inner)
			if err != nil {
				return err
			}
			if truthy(c) {
				kept = append(kept, item)
			}
		}
		items = kept
	}
	if len(items) == 0 {
		return it.exec(x.els, sc)
	}
	for i, item := range items {
		if err := it.step(1); err != nil {
			return err
		}
		loop := &loopInfo{index: i, length: len(items)}
		if i > 0 {
			loop.prev, loop.hasPrev = items[i-1], true
		}
		if i+1 < len(items) {
			loop.next, loop.hasNext = items[i+1], true
		}
		inner := &scope{vars: map[string]any{"loop": loop}, parent: sc}
		if err := bindTargets(inner, x.targets, item); err != nil {
			return fmt.Errorf("line %d: %v", x.line, err)
		}
		err := it.exec(x.body, inner)
		if errors.Is(err, errBreak) {
			break
		}
		if err != nil && !errors.Is(err, errContinue) {
			return err
		}
	}
	return nil
}

func bindTargets(sc *scope, targets []string, item any) error {
	if len(targets) == 1 {
		sc.vars[targets[0]] = item
		return nil
	}
	parts, ok := item.([]any)
	if !ok {
		if s, isStr := item.(string); isStr {
			for _, r := range s {
				parts = append(parts, string(r))
			}
		} else {
			return fmt.Errorf("cannot unpack %s into %d names", typeName(item), len(targets))
		}
	}
	if len(parts) != len(targets) {
		return fmt.Errorf("cannot unpack %d values into %d names", len(parts), len(targets))
	}
	for i, t := range targets {
		sc.vars[t] = parts[i]
	}
	return nil
}

// iterate lists what a for loop walks: list items, dict keys, string characters; undefined is
// empty.
func (it *interp) iterate(v any) ([]any, error) {
	switch x := v.(type) {
	case []any:
		return x, nil
	case *Dict:
		out := make([]any, len(x.keys))
		for i, k := range x.keys {
			out[i] = k
		}
		return out, nil
	case string:
		out := make([]any, 0, len(x))
		for _, r := range x {
			out = append(out, string(r))
		}
		return out, nil
	case undefined:
		return nil, nil
	case *namespace:
		return it.iterate(x.d)
	}
	return nil, fmt.Errorf("'%s' object is not iterable", typeName(v))
}

// macro makes a callable from a macro definition; it renders its body in a fresh scope over the
// template's top level.
func (it *interp) macro(m *macroNode, def *scope) *function {
	return &function{name: m.name, call: func(it *interp, args []any, kwargs *Dict) (any, error) {
		if err := it.enter(); err != nil {
			return nil, err
		}
		defer it.leave()
		if len(args) > len(m.params) {
			return nil, fmt.Errorf("macro %s takes not more than %d argument(s)", m.name, len(m.params))
		}
		sc := &scope{vars: map[string]any{}, parent: it.global}
		for i, p := range m.params {
			switch {
			case i < len(args):
				sc.vars[p] = args[i]
			default:
				if v, ok := kwargs.Get(p); ok {
					sc.vars[p] = v
				} else if d, ok := m.defaults[p]; ok {
					v, err := it.eval(d, def)
					if err != nil {
						return nil, err
					}
					sc.vars[p] = v
				} else {
					sc.vars[p] = undefined{name: p}
				}
			}
		}
		for _, k := range kwargs.Keys() {
			found := false
			for _, p := range m.params {
				found = found || p == k
			}
			if !found {
				return nil, fmt.Errorf("macro %s has no argument %q", m.name, k)
			}
		}
		if c, ok := def.lookup("caller"); ok {
			sc.vars["caller"] = c
		}
		return it.capture(m.body, sc)
	}}
}

func (it *interp) execCallBlock(x *callBlockNode, sc *scope) error {
	call := x.call.(*callExpr)
	inner := &scope{vars: map[string]any{"caller": &function{name: "caller", call: func(it *interp, _ []any, _ *Dict) (any, error) {
		return it.capture(x.body, sc)
	}}}, parent: sc}
	v, err := it.eval(call, inner)
	if err != nil {
		return err
	}
	return it.write(str(v))
}

func (it *interp) eval(e expr, sc *scope) (any, error) {
	if err := it.step(1); err != nil {
		return nil, err
	}
	if err := it.enter(); err != nil {
		return nil, err
	}
	defer it.leave()
	switch x := e.(type) {
	case *literal:
		return x.v, nil
	case *nameExpr:
		if v, ok := sc.lookup(x.name); ok {
			return v, nil
		}
		return undefined{name: x.name}, nil
	case *attrExpr:
		obj, err := it.eval(x.obj, sc)
		if err != nil {
			return nil, err
		}
		return it.getAttr(obj, x.name, x.line)
	case *indexExpr:
		obj, err := it.eval(x.obj, sc)
		if err != nil {
			return nil, err
		}
		key, err := it.eval(x.key, sc)
		if err != nil {
			return nil, err
		}
		return it.getItem(obj, key, x.line)
	case *sliceExpr:
		return it.evalSlice(x, sc)
	case *callExpr:
		return it.evalCall(x, sc)
	case *filterExpr:
		v, err := it.eval(x.x, sc)
		if err != nil {
			return nil, err
		}
		return it.applyFilter(x, v, sc)
	case *testExpr:
		v, err := it.eval(x.x, sc)
		if err != nil {
			return nil, err
		}
		args, err := it.evalList(x.args, sc)
		if err != nil {
			return nil, err
		}
		ok, err := it.applyTest(x.name, v, args, sc)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", x.line, err)
		}
		return ok != x.negate, nil
	case *unaryExpr:
		v, err := it.eval(x.x, sc)
		if err != nil {
			return nil, err
		}
		switch x.op {
		case "not":
			return !truthy(v), nil
		case "-":
			switch n := v.(type) {
			case int64:
				return -n, nil
			case float64:
				return -n, nil
			case bool:
				return -boolInt(n), nil
			}
			return nil, fmt.Errorf("bad operand type for unary -: '%s'", typeName(v))
		default:
			switch v.(type) {
			case int64, float64:
				return v, nil
			}
			return nil, fmt.Errorf("bad operand type for unary +: '%s'", typeName(v))
		}
	case *binExpr:
		return it.evalBinary(x, sc)
	case *condExpr:
		c, err := it.eval(x.cond, sc)
		if err != nil {
			return nil, err
		}
		if truthy(c) {
			return it.eval(x.then, sc)
		}
		if x.els == nil {
			return undefined{name: "conditional expression"}, nil
		}
		return it.eval(x.els, sc)
	case *listExpr:
		return it.evalList(x.items, sc)
	case *tupleExpr:
		return it.evalList(x.items, sc)
	case *dictExpr:
		d := NewDict()
		for i := range x.keys {
			k, err := it.eval(x.keys[i], sc)
			if err != nil {
				return nil, err
			}
			v, err := it.eval(x.vals[i], sc)
			if err != nil {
				return nil, err
			}
			ks, ok := k.(string)
			if !ok {
				ks = str(k)
			}
			d.Set(ks, v)
		}
		return d, nil
	}
	return nil, fmt.Errorf("internal: unknown expression %T", e)
}

func (it *interp) evalList(es []expr, sc *scope) ([]any, error) {
	out := make([]any, 0, len(es))
	for _, e := range es {
		v, err := it.eval(e, sc)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func undefErr(u undefined, line int) error {
	return fmt.Errorf("line %d: '%s' is undefined", line, u.name)
}

// getAttr is obj.name: a dict key (or a method of dict/str/list when no such key), a namespace
// attribute, a loop attribute. Names starting with "_" are unsafe in the sandbox.
func (it *interp) getAttr(obj any, name string, line int) (any, error) {
	if strings.HasPrefix(name, "_") {
		return nil, fmt.Errorf("line %d: access to attribute %q of %s object is unsafe", line, name, typeName(obj))
	}
	switch x := obj.(type) {
	case undefined:
		return nil, undefErr(x, line)
	case *Dict:
		if v, ok := x.m[name]; ok {
			return v, nil
		}
	case *namespace:
		if v, ok := x.d.m[name]; ok {
			return v, nil
		}
		return undefined{name: name}, nil
	case *loopInfo:
		return x.attr(name)
	}
	if m := method(obj, name); m != nil {
		return m, nil
	}
	if obj == nil {
		return nil, fmt.Errorf("line %d: 'None' has no attribute '%s'", line, name)
	}
	return undefined{name: typeName(obj) + "." + name}, nil
}

// getItem is obj[key]; a missing key or index is undefined, like jinja2's getitem.
func (it *interp) getItem(obj, key any, line int) (any, error) {
	switch x := obj.(type) {
	case undefined:
		return nil, undefErr(x, line)
	case *Dict:
		if k, ok := key.(string); ok {
			if v, ok := x.m[k]; ok {
				return v, nil
			}
			return undefined{name: k}, nil
		}
		return undefined{name: str(key)}, nil
	case []any:
		i, ok := key.(int64)
		if !ok {
			return nil, fmt.Errorf("line %d: list indices must be integers, not %s", line, typeName(key))
		}
		if i < 0 {
			i += int64(len(x))
		}
		if i < 0 || i >= int64(len(x)) {
			return undefined{name: "list index"}, nil
		}
		return x[i], nil
	case string:
		i, ok := key.(int64)
		if !ok {
			return nil, fmt.Errorf("line %d: string indices must be integers", line)
		}
		r := []rune(x)
		if i < 0 {
			i += int64(len(r))
		}
		if i < 0 || i >= int64(len(r)) {
			return undefined{name: "string index"}, nil
		}
		return string(r[i]), nil
	case *namespace:
		return it.getItem(x.d, key, line)
	case *loopInfo:
		if k, ok := key.(string); ok {
			return x.attr(k)
		}
	}
	if k, ok := key.(string); ok {
		return it.getAttr(obj, k, line)
	}
	return nil, fmt.Errorf("line %d: '%s' object is not subscriptable", line, typeName(obj))
}

func (l *loopInfo) attr(name string) (any, error) {
	switch name {
	case "index":
		return int64(l.index + 1), nil
	case "index0":
		return int64(l.index), nil
	case "revindex":
		return int64(l.length - l.index), nil
	case "revindex0":
		return int64(l.length - l.index - 1), nil
	case "first":
		return l.index == 0, nil
	case "last":
		return l.index == l.length-1, nil
	case "length":
		return int64(l.length), nil
	case "previtem":
		if !l.hasPrev {
			return undefined{name: "loop.previtem"}, nil
		}
		return l.prev, nil
	case "nextitem":
		if !l.hasNext {
			return undefined{name: "loop.nextitem"}, nil
		}
		return l.next, nil
	case "depth":
		return int64(1), nil
	case "depth0":
		return int64(0), nil
	case "cycle":
		return &function{name: "loop.cycle", call: func(_ *interp, args []any, _ *Dict) (any, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("no items for cycling given")
			}
			return args[l.index%len(args)], nil
		}}, nil
	}
	return undefined{name: "loop." + name}, nil
}

func (it *interp) evalSlice(x *sliceExpr, sc *scope) (any, error) {
	obj, err := it.eval(x.obj, sc)
	if err != nil {
		return nil, err
	}
	bound := func(e expr) (*int64, error) {
		if e == nil {
			return nil, nil
		}
		v, err := it.eval(e, sc)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, nil
		}
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("line %d: slice indices must be integers or None", x.line)
		}
		return &n, nil
	}
	lo, err := bound(x.lo)
	if err != nil {
		return nil, err
	}
	hi, err := bound(x.hi)
	if err != nil {
		return nil, err
	}
	st, err := bound(x.step)
	if err != nil {
		return nil, err
	}
	var items []any
	isStr := false
	switch o := obj.(type) {
	case []any:
		items = o
	case string:
		isStr = true
		for _, r := range o {
			items = append(items, string(r))
		}
	case undefined:
		return nil, undefErr(o, x.line)
	default:
		return nil, fmt.Errorf("line %d: '%s' object is not subscriptable", x.line, typeName(obj))
	}
	idx, err := sliceIndices(len(items), lo, hi, st)
	if err != nil {
		return nil, fmt.Errorf("line %d: %v", x.line, err)
	}
	if isStr {
		var b strings.Builder
		for _, i := range idx {
			b.WriteString(items[i].(string))
		}
		return b.String(), nil
	}
	out := make([]any, len(idx))
	for k, i := range idx {
		out[k] = items[i]
	}
	return out, nil
}

// sliceIndices is Python's slice.indices, expanded.
func sliceIndices(n int, lo, hi, st *int64) ([]int, error) {
	step := int64(1)
	if st != nil {
		step = *st
	}
	if step == 0 {
		return nil, fmt.Errorf("slice step cannot be zero")
	}
	clamp := func(p *int64, def int64) int64 {
		if p == nil {
			return def
		}
		v := *p
		if v < 0 {
			v += int64(n)
			if v < 0 {
				if step < 0 {
					return -1
				}
				return 0
			}
		}
		if v >= int64(n) {
			if step < 0 {
				return int64(n) - 1
			}
			return int64(n)
		}
		return v
	}
	var a, b int64
	if step > 0 {
		a, b = clamp(lo, 0), clamp(hi, int64(n))
	} else {
		a, b = clamp(lo, int64(n)-1), clamp(hi, -1)
		if hi == nil {
			b = -1
		}
	}
	var out []int
	for i := a; step > 0 && i < b || step < 0 && i > b; i += step {
		out = append(out, int(i))
	}
	return out, nil
}

func (it *interp) evalCall(x *callExpr, sc *scope) (any, error) {
	fn, err := it.eval(x.fn, sc)
	if err != nil {
		return nil, err
	}
	args, err := it.evalList(x.args, sc)
	if err != nil {
		return nil, err
	}
	kwargs := NewDict()
	for _, kw := range x.kwargs {
		v, err := it.eval(kw.val, sc)
		if err != nil {
			return nil, err
		}
		kwargs.Set(kw.name, v)
	}
	f, ok := fn.(*function)
	if !ok {
		if u, isU := fn.(undefined); isU {
			return nil, fmt.Errorf("line %d: '%s' is undefined", x.line, u.name)
		}
		return nil, fmt.Errorf("line %d: '%s' object is not callable", x.line, typeName(fn))
	}
	v, err := f.call(it, args, kwargs)
	if err != nil && !errors.Is(err, ErrLimit) && !errors.Is(err, ErrRaised) && !strings.HasPrefix(err.Error(), "line ") {
		err = fmt.Errorf("line %d: %s: %w", x.line, f.name, err)
	}
	return v, err
}

func (it *interp) evalBinary(x *binExpr, sc *scope) (any, error) {
	a, err := it.eval(x.a, sc)
	if err != nil {
		return nil, err
	}
	switch x.op {
	case "and":
		if !truthy(a) {
			return a, nil
		}
		return it.eval(x.b, sc)
	case "or":
		if truthy(a) {
			return a, nil
		}
		return it.eval(x.b, sc)
	}
	b, err := it.eval(x.b, sc)
	if err != nil {
		return nil, err
	}
	v, err := it.binary(x.op, a, b)
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", x.line, err)
	}
	return v, nil
}

func (it *interp) binary(op string, a, b any) (any, error) {
	if u, ok := a.(undefined); ok && op != "==" && op != "!=" && op != "~" && op != "in" && op != "not in" {
		return nil, fmt.Errorf("'%s' is undefined", u.name)
	}
	if u, ok := b.(undefined); ok && op != "==" && op != "!=" && op != "~" {
		return nil, fmt.Errorf("'%s' is undefined", u.name)
	}
	switch op {
	case "==":
		return equal(a, b), nil
	case "!=":
		return !equal(a, b), nil
	case "~":
		s := str(a) + str(b)
		return s, it.checkSize(len(s))
	case "in", "not in":
		in, err := contains(b, a)
		if err != nil {
			return nil, err
		}
		return in == (op == "in"), nil
	case "<", ">", "<=", ">=":
		c, err := compare(a, b)
		if err != nil {
			return nil, fmt.Errorf("'%s' not supported between instances of '%s' and '%s'", op, typeName(a), typeName(b))
		}
		switch op {
		case "<":
			return c < 0, nil
		case ">":
			return c > 0, nil
		case "<=":
			return c <= 0, nil
		}
		return c >= 0, nil
	case "+":
		switch x := a.(type) {
		case string:
			if y, ok := b.(string); ok {
				if err := it.checkSize(len(x) + len(y)); err != nil {
					return nil, err
				}
				return x + y, nil
			}
		case []any:
			if y, ok := b.([]any); ok {
				if err := it.checkSize(len(x) + len(y)); err != nil {
					return nil, err
				}
				return append(append([]any{}, x...), y...), nil
			}
		}
	case "*":
		if s, n, ok := repeatOperands(a, b); ok {
			if n <= 0 {
				return "", nil
			}
			if n > int64(it.lim.MaxOutput) || int64(len(s))*n > int64(it.lim.MaxOutput) {
				return nil, fmt.Errorf("string repeated %d times exceeds the %d-byte output budget: %w", n, it.lim.MaxOutput, ErrLimit)
			}
			return strings.Repeat(s, int(n)), nil
		}
		if l, n, ok := repeatList(a, b); ok {
			if n <= 0 {
				return []any{}, nil
			}
			if n > int64(it.lim.MaxOutput) || int64(len(l))*n > int64(it.lim.MaxOutput) {
				return nil, fmt.Errorf("list repeated %d times exceeds the output budget: %w", n, ErrLimit)
			}
			out := make([]any, 0, len(l)*int(n))
			for range n {
				out = append(out, l...)
			}
			return out, nil
		}
	}
	return arith(op, a, b)
}

func repeatOperands(a, b any) (string, int64, bool) {
	if s, ok := a.(string); ok {
		if n, ok := b.(int64); ok {
			return s, n, true
		}
	}
	if s, ok := b.(string); ok {
		if n, ok := a.(int64); ok {
			return s, n, true
		}
	}
	return "", 0, false
}

func repeatList(a, b any) ([]any, int64, bool) {
	if l, ok := a.([]any); ok {
		if n, ok := b.(int64); ok {
			return l, n, true
		}
	}
	return nil, 0, false
}

func number(v any) (float64, bool, bool) { // value, is-int, ok
	switch x := v.(type) {
	case int64:
		return float64(x), true, true
	case float64:
		return x, false, true
	case bool:
		return float64(boolInt(x)), true, true
	}
	return 0, false, false
}

func arith(op string, a, b any) (any, error) {
	fa, ia, ok1 := number(a)
	fb, ib, ok2 := number(b)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
	}
	if ia && ib {
		x, y := int64(fa), int64(fb)
		if ai, ok := a.(int64); ok {
			x = ai
		}
		if bi, ok := b.(int64); ok {
			y = bi
		}
		switch op {
		case "+":
			return x + y, nil
		case "-":
			return x - y, nil
		case "*":
			return x * y, nil
		case "//", "%":
			if y == 0 {
				return nil, fmt.Errorf("integer division or modulo by zero")
			}
			q, r := x/y, x%y
			if r != 0 && (r < 0) != (y < 0) {
				q--
				r += y
			}
			if op == "//" {
				return q, nil
			}
			return r, nil
		case "**":
			if y >= 0 && y < 64 {
				p := math.Pow(float64(x), float64(y))
				if math.Abs(p) < 1<<62 {
					r := int64(1)
					for range y {
						r *= x
					}
					return r, nil
				}
				return nil, fmt.Errorf("integer power too large: %w", ErrLimit)
			}
			if y >= 64 && (x > 1 || x < -1) {
				return nil, fmt.Errorf("integer power too large: %w", ErrLimit)
			}
			return math.Pow(float64(x), float64(y)), nil
		}
	}
	switch op {
	case "+":
		return fa + fb, nil
	case "-":
		return fa - fb, nil
	case "*":
		return fa * fb, nil
	case "/":
		if fb == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		return fa / fb, nil
	case "//":
		if fb == 0 {
			return nil, fmt.Errorf("float floor division by zero")
		}
		return math.Floor(fa / fb), nil
	case "%":
		if fb == 0 {
			return nil, fmt.Errorf("float modulo")
		}
		return fa - fb*math.Floor(fa/fb), nil
	case "**":
		return math.Pow(fa, fb), nil
	}
	return nil, fmt.Errorf("unsupported operator %s", op)
}

func compare(a, b any) (int, error) {
	if fa, _, ok := number(a); ok {
		if fb, _, ok := number(b); ok {
			switch {
			case fa < fb:
				return -1, nil
			case fa > fb:
				return 1, nil
			}
			return 0, nil
		}
	}
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), nil
		}
	}
	return 0, fmt.Errorf("not comparable")
}

func contains(container, item any) (bool, error) {
	switch c := container.(type) {
	case string:
		s, ok := item.(string)
		if !ok {
			return false, fmt.Errorf("'in <string>' requires string as left operand, not %s", typeName(item))
		}
		return strings.Contains(c, s), nil
	case []any:
		for _, e := range c {
			if equal(e, item) {
				return true, nil
			}
		}
		return false, nil
	case *Dict:
		s, ok := item.(string)
		if !ok {
			return false, nil
		}
		_, in := c.m[s]
		return in, nil
	case *namespace:
		return contains(c.d, item)
	case undefined:
		return false, fmt.Errorf("'%s' is undefined", c.name)
	}
	return false, fmt.Errorf("argument of type '%s' is not iterable", typeName(container))
}

func runeLen(s string) int64 { return int64(utf8.RuneCountInString(s)) }
