package jinja

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Dict is an insertion-ordered mapping with string keys, as Python dicts are: tojson, items()
// and iteration follow the order the keys were given in.
type Dict struct {
	keys []string
	m    map[string]any
}

// NewDict returns an empty Dict.
func NewDict() *Dict { return &Dict{m: map[string]any{}} }

// Set adds or replaces a key (a new key goes last).
func (d *Dict) Set(k string, v any) {
	if _, ok := d.m[k]; !ok {
		d.keys = append(d.keys, k)
	}
	d.m[k] = v
}

// Get returns the value of k.
func (d *Dict) Get(k string) (any, bool) { v, ok := d.m[k]; return v, ok }

// Len is the number of keys.
func (d *Dict) Len() int { return len(d.keys) }

// Keys are the keys in order.
func (d *Dict) Keys() []string { return d.keys }

// undefined is a missing variable or attribute: it prints as "", is falsy and iterates as empty;
// anything else done with it is an error naming it.
type undefined struct{ name string }

// namespace is the mutable object namespace() returns (the only mutation the sandbox allows).
type namespace struct{ d *Dict }

type loopInfo struct {
	index, length int
	prev, next    any
	hasPrev       bool
	hasNext       bool
}

// function is a callable value: a global, a bound method or a macro.
type function struct {
	name string
	call func(it *interp, args []any, kwargs *Dict) (any, error)
}

// ParseJSON decodes JSON into template values with object keys in document order (so tojson
// of a tool schema prints its keys as the request gave them). Numbers become int64 when integral,
// else float64.
func ParseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

const maxJSONDepth = 200

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("JSON nested more than %d deep", maxJSONDepth)
	}
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch x := t.(type) {
	case json.Delim:
		switch x {
		case '{':
			d := NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				d.Set(kt.(string), v)
			}
			_, err := dec.Token()
			return d, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token()
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", x)
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, nil
		}
		f, err := x.Float64()
		return f, err
	}
	return t, nil
}

// normalize turns Go values from callers into template values: maps become Dicts (keys sorted,
// as Go maps have no order), slices []any, integers int64, floats float64.
func normalize(v any) any {
	switch x := v.(type) {
	case nil, bool, string, int64, float64, *Dict, *namespace, *function, undefined:
		return v
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case float32:
		return float64(x)
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := NewDict()
		for _, k := range keys {
			d.Set(k, normalize(x[k]))
		}
		return d
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	}
	return fmt.Sprint(v)
}

// truthy is Python truthiness.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil, undefined:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case *Dict:
		return x.Len() > 0
	}
	return true
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case undefined:
		return "Undefined"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case *Dict:
		return "dict"
	case *namespace:
		return "Namespace"
	case *function:
		return "function"
	case *loopInfo:
		return "LoopContext"
	}
	return fmt.Sprintf("%T", v)
}

// str is Python's str().
func str(v any) string {
	switch x := v.(type) {
	case undefined:
		return ""
	case string:
		return x
	}
	return repr(v)
}

// repr is Python's repr() for template values.
func repr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case undefined:
		return ""
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return pyFloat(x)
	case string:
		return pyQuote(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = repr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *Dict:
		parts := make([]string, len(x.keys))
		for i, k := range x.keys {
			parts[i] = pyQuote(k) + ": " + repr(x.m[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case *namespace:
		return "<Namespace " + repr(x.d) + ">"
	case *function:
		return "<function " + x.name + ">"
	}
	return fmt.Sprint(v)
}

// pyFloat formats a float the way Python's repr does (shortest round-trip, ".0" for integers).
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e16 {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if strings.Contains(s, "e") {
		mant, exp, _ := strings.Cut(s, "e")
		if len(exp) == 2 { // e+5 -> e+05
			exp = exp[:1] + "0" + exp[1:]
		}
		s = mant + "e" + exp
	}
	return s
}

// pyQuote is Python's repr of a str: single quotes unless the text has ' and no ".
func pyQuote(s string) string {
	q := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, "\"") {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// toJSON is Python's json.dumps(v, ensure_ascii=False, indent=…, sort_keys=…) with its default
// separators, as transformers' tojson filter calls it.
func toJSON(b *strings.Builder, v any, indent string, level int, sortKeys bool) error {
	nl := func(l int) {
		if indent != "" {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(indent, l))
		}
	}
	sep := ", "
	if indent != "" {
		sep = ","
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		switch {
		case math.IsInf(x, 1):
			b.WriteString("Infinity")
		case math.IsInf(x, -1):
			b.WriteString("-Infinity")
		case math.IsNaN(x):
			b.WriteString("NaN")
		default:
			b.WriteString(pyFloat(x))
		}
	case string:
		jsonString(b, x)
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(sep)
			}
			nl(level + 1)
			if err := toJSON(b, e, indent, level+1, sortKeys); err != nil {
				return err
			}
		}
		nl(level)
		b.WriteByte(']')
	case *Dict:
		if x.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := x.keys
		if sortKeys {
			keys = append([]string(nil), keys...)
			sort.Strings(keys)
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(sep)
			}
			nl(level + 1)
			jsonString(b, k)
			b.WriteString(": ")
			if err := toJSON(b, x.m[k], indent, level+1, sortKeys); err != nil {
				return err
			}
		}
		nl(level)
		b.WriteByte('}')
	case *namespace:
		return toJSON(b, x.d, indent, level, sortKeys)
	default:
		//lint:ignore ST1005 Python's own TypeError text, verbatim: a template's error reads as jinja2 renders it
		return fmt.Errorf("Object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

func jsonString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// equal is Python ==.
func equal(a, b any) bool {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return x == y
		case float64:
			return float64(x) == y
		case bool:
			return x == boolInt(y)
		}
	case float64:
		switch y := b.(type) {
		case int64:
			return x == float64(y)
		case float64:
			return x == y
		}
	case bool:
		switch y := b.(type) {
		case bool:
			return x == y
		case int64:
			return boolInt(x) == y
		}
	case string:
		y, ok := b.(string)
		return ok && x == y
	case nil:
		return b == nil
	case undefined:
		_, ok := b.(undefined)
		return ok
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case *Dict:
		y, ok := b.(*Dict)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for _, k := range x.keys {
			w, ok := y.m[k]
			if !ok || !equal(x.m[k], w) {
				return false
			}
		}
		return true
	}
	return a == b
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
