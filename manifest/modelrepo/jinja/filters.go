package jinja

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// applyFilter runs a filter (x | name(args)).
func (it *interp) applyFilter(f *filterExpr, v any, sc *scope) (any, error) {
	args, err := it.evalList(f.args, sc)
	if err != nil {
		return nil, err
	}
	kwargs := NewDict()
	for _, kw := range f.kwargs {
		val, err := it.eval(kw.val, sc)
		if err != nil {
			return nil, err
		}
		kwargs.Set(kw.name, val)
	}
	out, err := it.filter(f.name, v, args, kwargs, sc)
	if err != nil && !strings.HasPrefix(err.Error(), "line ") {
		err = fmt.Errorf("line %d: filter %s: %w", f.line, f.name, err)
	}
	return out, err
}

// arg returns positional argument i or keyword name, else def.
func arg(args []any, kwargs *Dict, i int, name string, def any) any {
	if i < len(args) {
		return args[i]
	}
	if v, ok := kwargs.Get(name); ok {
		return v
	}
	return def
}

// undefinedFilters take an undefined value the way jinja2's default Undefined lets them: as ""
// (the string filters; a chat template's message['content'] | trim on a turn without content)
// or as an empty sequence. The others raise, as jinja2's do (int, tojson, indent, dictsort...).
var undefinedFilters = map[string]bool{
	"default": true, "d": true, "string": true, "list": true, "length": true, "count": true,
	"trim": true, "upper": true, "lower": true, "capitalize": true, "title": true, "replace": true,
	"wordcount": true, "safe": true, "e": true, "escape": true, "join": true, "first": true, "last": true, "sort": true,
}

func (it *interp) filter(name string, v any, args []any, kwargs *Dict, sc *scope) (any, error) {
	if u, ok := v.(undefined); ok && !undefinedFilters[name] {
		return nil, fmt.Errorf("'%s' is undefined", u.name)
	}
	switch name {
	case "trim":
		return it.filterTrim(name, v, args, kwargs)
	case "length", "count":
		return it.filterLength(name, v, args, kwargs)
	case "string":
		return str(v), nil
	case "upper":
		return strings.ToUpper(str(v)), nil
	case "lower":
		return strings.ToLower(str(v)), nil
	case "capitalize":
		return it.filterCapitalize(name, v, args, kwargs)
	case "title":
		return pyTitle(str(v)), nil
	case "default", "d":
		return it.filterDefault(name, v, args, kwargs)
	case "first", "last":
		return it.filterFirst(name, v, args, kwargs)
	case "join":
		return it.filterJoin(name, v, args, kwargs)
	case "list":
		return it.iterate(v)
	case "items":
		return it.filterItems(name, v, args, kwargs)
	case "dictsort":
		return it.filterDictsort(name, v, args, kwargs)
	case "tojson":
		return it.filterTojson(name, v, args, kwargs)
	case "replace":
		return it.filterReplace(name, v, args, kwargs)
	case "safe", "e", "escape", "forceescape":
		return it.filterSafe(name, v, args, kwargs)
	case "int":
		return it.filterInt(name, v, args, kwargs)
	case "float":
		return it.filterFloat(name, v, args, kwargs)
	case "abs":
		return it.filterAbs(name, v, args, kwargs)
	case "round":
		return it.filterRound(name, v, args, kwargs)
	case "reverse":
		return it.filterReverse(name, v, args, kwargs)
	case "sort":
		return it.filterSort(name, v, args, kwargs)
	case "unique":
		return it.filterUnique(name, v, args, kwargs)
	case "indent":
		return it.filterIndent(name, v, args, kwargs)
	case "wordcount":
		return int64(len(strings.Fields(str(v)))), nil
	case "center":
		return str(v), nil
	case "batch", "slice":
		return nil, fmt.Errorf("filter %s is not supported", name)
	case "map":
		return it.mapFilter(v, args, kwargs, sc)
	case "select", "reject", "selectattr", "rejectattr":
		return it.selectFilter(name, v, args, kwargs, sc)
	case "attr":
		return it.getAttr(v, str(arg(args, kwargs, 0, "name", "")), 0)
	case "min", "max":
		return it.filterMin(name, v, args, kwargs)
	case "sum":
		return it.filterSum(name, v, args, kwargs)
	}
	return nil, fmt.Errorf("no filter named %q", name)
}

// filterTrim is the trim filter.
func (it *interp) filterTrim(name string, v any, args []any, kwargs *Dict) (any, error) {
	s, ok := v.(string)
	if !ok {
		s = str(v)
	}
	if chars, ok := arg(args, kwargs, 0, "chars", nil).(string); ok {
		return strings.Trim(s, chars), nil
	}
	return strings.TrimSpace(s), nil
}

// filterLength is the length / count filter.
func (it *interp) filterLength(name string, v any, args []any, kwargs *Dict) (any, error) {
	switch x := v.(type) {
	case string:
		return runeLen(x), nil
	case []any:
		return int64(len(x)), nil
	case *Dict:
		return int64(x.Len()), nil
	case undefined:
		return int64(0), nil
	}
	return nil, fmt.Errorf("object of type '%s' has no len()", typeName(v))
}

// filterCapitalize is the capitalize filter.
func (it *interp) filterCapitalize(name string, v any, args []any, kwargs *Dict) (any, error) {
	s := str(v)
	if s == "" {
		return s, nil
	}
	r := []rune(strings.ToLower(s))
	r[0] = unicode.ToUpper(r[0])
	return string(r), nil
}

// filterDefault is the default / d filter.
func (it *interp) filterDefault(name string, v any, args []any, kwargs *Dict) (any, error) {
	def := arg(args, kwargs, 0, "default_value", "")
	boolean := truthy(arg(args, kwargs, 1, "boolean", false))
	if _, isU := v.(undefined); isU || boolean && !truthy(v) {
		return def, nil
	}
	return v, nil
}

// filterFirst is the first / last filter.
func (it *interp) filterFirst(name string, v any, args []any, kwargs *Dict) (any, error) {
	items, err := it.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return undefined{name: name}, nil
	}
	if name == "first" {
		return items[0], nil
	}
	return items[len(items)-1], nil
}

// filterJoin is the join filter.
func (it *interp) filterJoin(name string, v any, args []any, kwargs *Dict) (any, error) {
	items, err := it.iterate(v)
	if err != nil {
		return nil, err
	}
	sep := str(arg(args, kwargs, 0, "d", ""))
	attr, hasAttr := arg(args, kwargs, 1, "attribute", nil).(string)
	parts := make([]string, len(items))
	n := 0
	for i, e := range items {
		if hasAttr {
			var err error
			if e, err = it.getItem(e, attr, 0); err != nil {
				return nil, err
			}
		}
		parts[i] = str(e)
		n += len(parts[i]) + len(sep)
	}
	if err := it.checkSize(n); err != nil {
		return nil, err
	}
	return strings.Join(parts, sep), nil
}

// filterItems is the items filter.
func (it *interp) filterItems(name string, v any, args []any, kwargs *Dict) (any, error) {
	d, ok := v.(*Dict)
	if !ok {
		return nil, fmt.Errorf("items of a %s", typeName(v))
	}
	return dictItems(d), nil
}

// filterDictsort is the dictsort filter.
func (it *interp) filterDictsort(name string, v any, args []any, kwargs *Dict) (any, error) {
	d, ok := v.(*Dict)
	if !ok {
		return nil, fmt.Errorf("dictsort of a %s", typeName(v))
	}
	keys := append([]string(nil), d.keys...)
	sort.Strings(keys)
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = []any{k, d.m[k]}
	}
	return out, nil
}

// filterTojson is the tojson filter.
func (it *interp) filterTojson(name string, v any, args []any, kwargs *Dict) (any, error) {
	indent := ""
	switch n := arg(args, kwargs, 0, "indent", nil).(type) {
	case int64:
		indent = strings.Repeat(" ", int(min(max(n, 0), 64)))
	case string:
		indent = n
	}
	var b strings.Builder
	if err := toJSON(&b, v, indent, 0, truthy(arg(args, kwargs, 99, "sort_keys", false))); err != nil {
		return nil, err
	}
	return b.String(), it.checkSize(b.Len())
}

// filterReplace is the replace filter.
func (it *interp) filterReplace(name string, v any, args []any, kwargs *Dict) (any, error) {
	s := str(v)
	old, nw := str(arg(args, kwargs, 0, "old", "")), str(arg(args, kwargs, 1, "new", ""))
	cnt := int64(-1)
	if c, ok := arg(args, kwargs, 2, "count", nil).(int64); ok {
		cnt = c
	}
	if old == "" && int64(len(s)+1)*int64(len(nw)) > int64(it.lim.MaxOutput) {
		return nil, fmt.Errorf("replace result exceeds the output budget: %w", ErrLimit)
	}
	out := strings.Replace(s, old, nw, int(max(cnt, -1)))
	return out, it.checkSize(len(out))
}

// filterSafe is the safe / e / escape / forceescape filter.
func (it *interp) filterSafe(name string, v any, args []any, kwargs *Dict) (any, error) {
	if name == "safe" {
		return v, nil
	}
	s := str(v)
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\"", "&#34;", "'", "&#39;")
	return r.Replace(s), nil
}

// filterInt is the int filter.
func (it *interp) filterInt(name string, v any, args []any, kwargs *Dict) (any, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case float64:
		return int64(x), nil
	case bool:
		return boolInt(x), nil
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			return n, nil
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
			return int64(f), nil
		}
	}
	return arg(args, kwargs, 0, "default", int64(0)), nil
}

// filterFloat is the float filter.
func (it *interp) filterFloat(name string, v any, args []any, kwargs *Dict) (any, error) {
	if f, _, ok := number(v); ok {
		return f, nil
	}
	if s, ok := v.(string); ok {
		if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			return f, nil
		}
	}
	return arg(args, kwargs, 0, "default", 0.0), nil
}

// filterAbs is the abs filter.
func (it *interp) filterAbs(name string, v any, args []any, kwargs *Dict) (any, error) {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return -x, nil
		}
		return x, nil
	case float64:
		return math.Abs(x), nil
	}
	return nil, fmt.Errorf("bad operand type for abs(): '%s'", typeName(v))
}

// filterRound is the round filter.
func (it *interp) filterRound(name string, v any, args []any, kwargs *Dict) (any, error) {
	f, _, ok := number(v)
	if !ok {
		return nil, fmt.Errorf("round of a %s", typeName(v))
	}
	prec, _ := arg(args, kwargs, 0, "precision", int64(0)).(int64)
	p := math.Pow(10, float64(prec))
	switch arg(args, kwargs, 1, "method", "common") {
	case "ceil":
		return math.Ceil(f*p) / p, nil
	case "floor":
		return math.Floor(f*p) / p, nil
	}
	return math.Round(f*p) / p, nil
}

// filterReverse is the reverse filter.
func (it *interp) filterReverse(name string, v any, args []any, kwargs *Dict) (any, error) {
	if s, ok := v.(string); ok {
		r := []rune(s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r), nil
	}
	items, err := it.iterate(v)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i, e := range items {
		out[len(items)-1-i] = e
	}
	return out, nil
}

// filterSort is the sort filter.
func (it *interp) filterSort(name string, v any, args []any, kwargs *Dict) (any, error) {
	items, err := it.iterate(v)
	if err != nil {
		return nil, err
	}
	out := append([]any(nil), items...)
	attr, _ := arg(args, kwargs, 2, "attribute", nil).(string)
	rev := truthy(arg(args, kwargs, 0, "reverse", false))
	var serr error
	key := func(e any) any {
		if attr == "" {
			return e
		}
		k, err := it.getItem(e, attr, 0)
		if err != nil {
			serr = err
		}
		return k
	}
	sort.SliceStable(out, func(i, j int) bool {
		c, err := compare(key(out[i]), key(out[j]))
		if err != nil {
			serr = err
		}
		if rev {
			return c > 0
		}
		return c < 0
	})
	return out, serr
}

// filterUnique is the unique filter.
func (it *interp) filterUnique(name string, v any, args []any, kwargs *Dict) (any, error) {
	items, err := it.iterate(v)
	if err != nil {
		return nil, err
	}
	var out []any
	for _, e := range items {
		dup := false
		for _, o := range out {
			dup = dup || equal(o, e)
		}
		if !dup {
			out = append(out, e)
		}
	}
	return out, nil
}

// filterIndent is the indent filter.
func (it *interp) filterIndent(name string, v any, args []any, kwargs *Dict) (any, error) {
	s := str(v)
	width := arg(args, kwargs, 0, "width", int64(4))
	pad := ""
	switch w := width.(type) {
	case int64:
		pad = strings.Repeat(" ", int(min(max(w, 0), 1024)))
	case string:
		pad = w
	}
	first, blank := truthy(arg(args, kwargs, 1, "first", false)), truthy(arg(args, kwargs, 2, "blank", false))
	lines := strings.Split(s, "\n")
	for i := range lines {
		if i == 0 && !first || !blank && strings.TrimSpace(lines[i]) == "" && i > 0 {
			continue
		}
		lines[i] = pad + lines[i]
	}
	out := strings.Join(lines, "\n")
	return out, it.checkSize(len(out))
}

// filterMin is the min / max filter.
func (it *interp) filterMin(name string, v any, args []any, kwargs *Dict) (any, error) {
	items, err := it.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return undefined{name: name}, nil
	}
	best := items[0]
	for _, e := range items[1:] {
		c, err := compare(e, best)
		if err != nil {
			return nil, err
		}
		if name == "min" && c < 0 || name == "max" && c > 0 {
			best = e
		}
	}
	return best, nil
}

// filterSum is the sum filter.
func (it *interp) filterSum(name string, v any, args []any, kwargs *Dict) (any, error) {
	items, err := it.iterate(v)
	if err != nil {
		return nil, err
	}
	var acc any = int64(0)
	for _, e := range items {
		if acc, err = arith("+", acc, e); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

func dictItems(d *Dict) []any {
	out := make([]any, len(d.keys))
	for i, k := range d.keys {
		out[i] = []any{k, d.m[k]}
	}
	return out
}

func pyTitle(s string) string {
	var b strings.Builder
	prevLetter := false
	for _, r := range s {
		if unicode.IsLetter(r) {
			if prevLetter {
				b.WriteRune(unicode.ToLower(r))
			} else {
				b.WriteRune(unicode.ToTitle(r))
			}
			prevLetter = true
		} else {
			b.WriteRune(r)
			prevLetter = false
		}
	}
	return b.String()
}

func (it *interp) mapFilter(v any, args []any, kwargs *Dict, sc *scope) (any, error) {
	items, err := it.iterate(v)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(items))
	if attr, ok := kwargs.Get("attribute"); ok {
		def, hasDef := kwargs.Get("default")
		for _, e := range items {
			x, err := it.getItem(e, attr, 0)
			if err != nil {
				return nil, err
			}
			if _, isU := x.(undefined); isU && hasDef {
				x = def
			}
			out = append(out, x)
		}
		return out, nil
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("map needs a filter name or attribute=")
	}
	fname := str(args[0])
	for _, e := range items {
		x, err := it.filter(fname, e, args[1:], NewDict(), sc)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

func (it *interp) selectFilter(name string, v any, args []any, kwargs *Dict, sc *scope) (any, error) {
	items, err := it.iterate(v)
	if err != nil {
		return nil, err
	}
	byAttr := strings.HasSuffix(name, "attr")
	want := strings.HasPrefix(name, "select")
	var attr string
	if byAttr {
		if len(args) == 0 {
			return nil, fmt.Errorf("%s needs an attribute name", name)
		}
		attr, args = str(args[0]), args[1:]
	}
	var out []any
	for _, e := range items {
		x := e
		if byAttr {
			if x, err = it.getItem(e, attr, 0); err != nil {
				return nil, err
			}
		}
		var ok bool
		if len(args) == 0 {
			ok = truthy(x)
		} else if ok, err = it.applyTest(str(args[0]), x, args[1:], sc); err != nil {
			return nil, err
		}
		if ok == want {
			out = append(out, e)
		}
	}
	return out, nil
}

// applyTest runs a test (x is name(args)).
func (it *interp) applyTest(name string, v any, args []any, sc *scope) (bool, error) {
	a0 := func() (any, error) {
		if len(args) == 0 {
			return nil, fmt.Errorf("test %s needs an argument", name)
		}
		return args[0], nil
	}
	switch name {
	case "defined":
		_, u := v.(undefined)
		return !u, nil
	case "undefined":
		_, u := v.(undefined)
		return u, nil
	case "none":
		return v == nil, nil
	case "string":
		_, ok := v.(string)
		return ok, nil
	case "number":
		switch v.(type) {
		case int64, float64:
			return true, nil
		}
		return false, nil
	case "integer":
		_, ok := v.(int64)
		return ok, nil
	case "float":
		_, ok := v.(float64)
		return ok, nil
	case "boolean":
		_, ok := v.(bool)
		return ok, nil
	case "true":
		b, ok := v.(bool)
		return ok && b, nil
	case "false":
		b, ok := v.(bool)
		return ok && !b, nil
	case "mapping":
		switch v.(type) {
		case *Dict, *namespace:
			return true, nil
		}
		return false, nil
	case "iterable":
		switch v.(type) {
		case []any, *Dict, string:
			return true, nil
		}
		return false, nil
	case "sequence":
		switch v.(type) {
		case []any, *Dict, string:
			return true, nil
		}
		return false, nil
	case "callable":
		_, ok := v.(*function)
		return ok, nil
	case "odd", "even":
		n, ok := v.(int64)
		if !ok {
			return false, fmt.Errorf("%s of a %s", name, typeName(v))
		}
		return (n%2 != 0) == (name == "odd"), nil
	case "divisibleby":
		d, err := a0()
		if err != nil {
			return false, err
		}
		n, ok1 := v.(int64)
		m, ok2 := d.(int64)
		if !ok1 || !ok2 || m == 0 {
			return false, fmt.Errorf("divisibleby needs non-zero integers")
		}
		return n%m == 0, nil
	case "lower":
		s, ok := v.(string)
		return ok && strings.ToLower(s) == s, nil
	case "upper":
		s, ok := v.(string)
		return ok && strings.ToUpper(s) == s, nil
	case "in":
		c, err := a0()
		if err != nil {
			return false, err
		}
		return contains(c, v)
	case "sameas":
		o, err := a0()
		if err != nil {
			return false, err
		}
		return v == nil && o == nil || equal(v, o) && typeName(v) == typeName(o), nil
	case "eq", "equalto", "==", "ne", "!=", "lt", "lessthan", "<", "le", "<=", "gt", "greaterthan", ">", "ge", ">=":
		o, err := a0()
		if err != nil {
			return false, err
		}
		op := map[string]string{"eq": "==", "equalto": "==", "ne": "!=", "lt": "<", "lessthan": "<", "le": "<=", "gt": ">", "greaterthan": ">", "ge": ">="}[name]
		if op == "" {
			op = name
		}
		r, err := it.binary(op, v, o)
		if err != nil {
			return false, err
		}
		return r.(bool), nil
	}
	return false, fmt.Errorf("no test named %q", name)
}

// method returns the bound method name of a str, dict or list value, or nil. Methods that
// mutate (append, update, pop, …) are absent: the sandbox is immutable.
func method(obj any, name string) *function {
	bind := func(f func(it *interp, args []any, kwargs *Dict) (any, error)) *function {
		return &function{name: typeName(obj) + "." + name, call: f}
	}
	switch x := obj.(type) {
	case string:
		return strMethod(x, name, bind)
	case *Dict:
		switch name {
		case "items":
			return bind(func(*interp, []any, *Dict) (any, error) { return dictItems(x), nil })
		case "keys":
			return bind(func(*interp, []any, *Dict) (any, error) {
				out := make([]any, len(x.keys))
				for i, k := range x.keys {
					out[i] = k
				}
				return out, nil
			})
		case "values":
			return bind(func(*interp, []any, *Dict) (any, error) {
				out := make([]any, len(x.keys))
				for i, k := range x.keys {
					out[i] = x.m[k]
				}
				return out, nil
			})
		case "get":
			return bind(func(_ *interp, args []any, kw *Dict) (any, error) {
				k, ok := arg(args, kw, 0, "key", nil).(string)
				if v, found := x.m[k]; ok && found {
					return v, nil
				}
				return arg(args, kw, 1, "default", nil), nil
			})
		}
	case []any:
		switch name {
		case "index":
			return bind(func(_ *interp, args []any, _ *Dict) (any, error) {
				for i, e := range x {
					if len(args) > 0 && equal(e, args[0]) {
						return int64(i), nil
					}
				}
				return nil, fmt.Errorf("value is not in list")
			})
		case "count":
			return bind(func(_ *interp, args []any, _ *Dict) (any, error) {
				n := int64(0)
				for _, e := range x {
					if len(args) > 0 && equal(e, args[0]) {
						n++
					}
				}
				return n, nil
			})
		}
	}
	return nil
}

func strMethod(s, name string, bind func(func(*interp, []any, *Dict) (any, error)) *function) *function {
	strArg := func(args []any, i int) (string, bool) {
		if i < len(args) {
			v, ok := args[i].(string)
			return v, ok
		}
		return "", false
	}
	switch name {
	case "strip", "lstrip", "rstrip":
		return bind(func(_ *interp, args []any, _ *Dict) (any, error) {
			chars, has := strArg(args, 0)
			switch {
			case name == "strip" && has:
				return strings.Trim(s, chars), nil
			case name == "strip":
				return strings.TrimSpace(s), nil
			case name == "lstrip" && has:
				return strings.TrimLeft(s, chars), nil
			case name == "lstrip":
				return strings.TrimLeftFunc(s, unicode.IsSpace), nil
			case has:
				return strings.TrimRight(s, chars), nil
			}
			return strings.TrimRightFunc(s, unicode.IsSpace), nil
		})
	case "upper", "lower", "title", "capitalize":
		return bind(func(it *interp, _ []any, _ *Dict) (any, error) { return it.filter(name, s, nil, NewDict(), nil) })
	case "startswith", "endswith":
		return bind(func(_ *interp, args []any, _ *Dict) (any, error) {
			var cands []any
			switch a := arg(args, NewDict(), 0, "", nil).(type) {
			case string:
				cands = []any{a}
			case []any:
				cands = a
			default:
				return nil, fmt.Errorf("%s arg must be str or a tuple of str", name)
			}
			for _, c := range cands {
				p, _ := c.(string)
				if name == "startswith" && strings.HasPrefix(s, p) || name == "endswith" && strings.HasSuffix(s, p) {
					return true, nil
				}
			}
			return false, nil
		})
	case "split", "rsplit":
		return bind(func(it *interp, args []any, kw *Dict) (any, error) {
			sep, has := arg(args, kw, 0, "sep", nil).(string)
			maxs := int64(-1)
			if m, ok := arg(args, kw, 1, "maxsplit", nil).(int64); ok {
				maxs = m
			}
			var parts []string
			switch {
			case !has:
				parts = strings.Fields(s)
			case sep == "":
				return nil, fmt.Errorf("empty separator")
			case maxs < 0:
				parts = strings.Split(s, sep)
			case name == "split":
				parts = strings.SplitN(s, sep, int(maxs)+1)
			default:
				parts = rsplitN(s, sep, int(maxs))
			}
			if err := it.checkSize(len(parts)); err != nil {
				return nil, err
			}
			out := make([]any, len(parts))
			for i, p := range parts {
				out[i] = p
			}
			return out, nil
		})
	case "replace":
		return bind(func(it *interp, args []any, kw *Dict) (any, error) { return it.filter("replace", s, args, kw, nil) })
	case "join":
		return bind(func(it *interp, args []any, _ *Dict) (any, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("join needs an iterable")
			}
			return it.filter("join", args[0], []any{s}, NewDict(), nil)
		})
	case "find", "count":
		return bind(func(_ *interp, args []any, _ *Dict) (any, error) {
			sub, _ := strArg(args, 0)
			if name == "count" {
				return int64(strings.Count(s, sub)), nil
			}
			i := strings.Index(s, sub)
			if i < 0 {
				return int64(-1), nil
			}
			return runeLen(s[:i]), nil
		})
	case "splitlines":
		return bind(func(_ *interp, _ []any, _ *Dict) (any, error) {
			var out []any
			for _, l := range strings.Split(strings.TrimSuffix(strings.ReplaceAll(s, "\r\n", "\n"), "\n"), "\n") {
				out = append(out, l)
			}
			if s == "" {
				out = []any{}
			}
			return out, nil
		})
	case "isdigit", "isalpha", "isspace", "isupper", "islower":
		return bind(func(_ *interp, _ []any, _ *Dict) (any, error) {
			if s == "" {
				return false, nil
			}
			for _, r := range s {
				ok := map[string]func(rune) bool{"isdigit": unicode.IsDigit, "isalpha": unicode.IsLetter, "isspace": unicode.IsSpace, "isupper": unicode.IsUpper, "islower": unicode.IsLower}[name](r)
				if !ok && (name == "isupper" || name == "islower") && !unicode.IsLetter(r) {
					continue
				}
				if !ok {
					return false, nil
				}
			}
			return true, nil
		})
	}
	return nil
}

func rsplitN(s, sep string, n int) []string {
	var out []string
	for n > 0 {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		out = append([]string{s[i+len(sep):]}, out...)
		s = s[:i]
		n--
	}
	return append([]string{s}, out...)
}
