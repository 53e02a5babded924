package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// RedactJSON re-encodes a JSON document with Redact applied to every string value (object keys
// are left as they are), in the same order, indented with two spaces and ending in a newline:
// the values are redacted, then encoding/json is the last step. <, > and & are not escaped.
func RedactJSON(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	type frame struct {
		obj bool
		n   int
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) && len(stack) == 0 {
				break
			}
			return nil, fmt.Errorf("redact JSON: %w", err)
		}
		key := false
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			out.WriteByte(byte(d))
		} else {
			if len(stack) > 0 {
				top := &stack[len(stack)-1]
				switch {
				case top.obj && top.n%2 == 1:
					out.WriteByte(':')
				case top.n > 0:
					out.WriteByte(',')
				}
				key = top.obj && top.n%2 == 0
				top.n++
			}
			switch t := tok.(type) {
			case json.Delim:
				out.WriteByte(byte(t))
				stack = append(stack, frame{obj: t == '{'})
			case string:
				if !key {
					t = Redact(t)
				}
				if err := enc.Encode(t); err != nil {
					return nil, err
				}
				out.Truncate(out.Len() - 1) // Encode's newline
			case json.Number:
				out.WriteString(t.String())
			case bool:
				fmt.Fprint(&out, t)
			case nil:
				out.WriteString("null")
			}
		}
		if len(stack) == 0 && out.Len() > 0 {
			break // one document
		}
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, out.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("redact JSON: %w", err)
	}
	ind.WriteByte('\n')
	return ind.Bytes(), nil
}
