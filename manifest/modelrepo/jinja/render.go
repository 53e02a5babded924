package jinja

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Template is a parsed template; it is read-only, so one Template may render concurrently.
type Template struct {
	nodes []node
}

// Parse parses a template for rendering with transformers' settings (trim_blocks,
// lstrip_blocks, loopcontrols). Errors are *SyntaxError with the line and column of the
// problem; one for a construct jinja2 accepts but this renderer cannot run wraps ErrUnsupported.
func Parse(src string) (*Template, error) { return ParseNamed(src, "") }

// ParseNamed is Parse for a template read from name, which its errors carry.
func ParseNamed(src, name string) (t *Template, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, parserPanic(name, p)
		}
	}()
	nodes, unsupported, err := parse(src, name)
	if err != nil {
		return nil, err
	}
	if unsupported != nil {
		return nil, unsupported
	}
	return &Template{nodes: nodes}, nil
}

// Check parses src the way jinja2 compiles it, without rendering, and returns a *SyntaxError
// naming name, the line and the column of the first problem, or nil. Constructs jinja2 accepts
// that the renderer cannot run are not errors here.
func Check(src, name string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = parserPanic(name, p)
		}
	}()
	_, _, err = parse(src, name)
	return err
}

// parserPanic turns a parser panic (a bug, which the fuzz tests look for) into an error.
func parserPanic(name string, p any) error {
	if name == "" {
		return fmt.Errorf("template parser failed: %v", p)
	}
	return fmt.Errorf("%s: template parser failed: %v", name, p)
}

// Render renders t with vars (the messages, tools, add_generation_prompt, bos_token, …; Go maps
// and slices are converted, *Dict values keep their key order) and the globals transformers
// provides: raise_exception, strftime_now (formatting now), namespace, range, dict, lipsum-free.
// A render that exceeds a limit fails with an error wrapping ErrLimit; raise_exception with one
// wrapping ErrRaised; ctx cancels it.
func (t *Template) Render(ctx context.Context, vars map[string]any, now time.Time, lim Limits) (out string, err error) {
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = 100
	}
	if lim.MaxSteps <= 0 {
		lim.MaxSteps = 10_000_000
	}
	if lim.MaxOutput <= 0 {
		lim.MaxOutput = 1 << 20
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("template renderer failed: %v", p)
		}
	}()
	var b strings.Builder
	it := &interp{ctx: ctx, lim: lim, out: &b}
	g := &scope{vars: globals(now)}
	for k, v := range vars {
		g.vars[k] = normalize(v)
	}
	it.global = &scope{vars: map[string]any{}, parent: g}
	err = it.exec(t.nodes, it.global)
	if errors.Is(err, errBreak) || errors.Is(err, errContinue) {
		err = fmt.Errorf("break or continue outside a loop")
	}
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

func globals(now time.Time) map[string]any {
	return map[string]any{
		"raise_exception": &function{name: "raise_exception", call: func(_ *interp, args []any, _ *Dict) (any, error) {
			msg := ""
			if len(args) > 0 {
				msg = str(args[0])
			}
			return nil, fmt.Errorf("%w: %s", ErrRaised, msg)
		}},
		"strftime_now": &function{name: "strftime_now", call: func(_ *interp, args []any, _ *Dict) (any, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("strftime_now needs a format")
			}
			return Strftime(now, str(args[0])), nil
		}},
		"namespace": &function{name: "namespace", call: func(_ *interp, args []any, kw *Dict) (any, error) {
			d := NewDict()
			for _, a := range args {
				if src, ok := a.(*Dict); ok {
					for _, k := range src.keys {
						d.Set(k, src.m[k])
					}
				}
			}
			for _, k := range kw.keys {
				d.Set(k, kw.m[k])
			}
			return &namespace{d: d}, nil
		}},
		"dict": &function{name: "dict", call: func(_ *interp, _ []any, kw *Dict) (any, error) {
			d := NewDict()
			for _, k := range kw.keys {
				d.Set(k, kw.m[k])
			}
			return d, nil
		}},
		"range": &function{name: "range", call: func(it *interp, args []any, _ *Dict) (any, error) {
			var ns [3]int64
			ns[2] = 1
			for i, a := range args {
				n, ok := a.(int64)
				if !ok || i > 2 {
					return nil, fmt.Errorf("range() takes up to 3 integers")
				}
				ns[i] = n
			}
			lo, hi, st := int64(0), ns[0], ns[2]
			if len(args) >= 2 {
				lo, hi = ns[0], ns[1]
			}
			if st == 0 {
				return nil, fmt.Errorf("range() arg 3 must not be zero")
			}
			n := (hi - lo + st - sign(st)) / st
			if n <= 0 {
				return []any{}, nil
			}
			if n > it.lim.MaxSteps || n > int64(it.lim.MaxOutput) {
				return nil, fmt.Errorf("range of %d items exceeds the budget: %w", n, ErrLimit)
			}
			if err := it.step(n); err != nil {
				return nil, err
			}
			out := make([]any, n)
			for i := range out {
				out[i] = lo + int64(i)*st
			}
			return out, nil
		}},
	}
}

func sign(n int64) int64 {
	if n < 0 {
		return -1
	}
	return 1
}

// Strftime formats t with the C directives chat templates use (Llama 3.2 asks for "%d %b %Y").
func Strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'b':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
