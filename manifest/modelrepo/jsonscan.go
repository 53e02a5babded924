package modelrepo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Tokenizer files are large (tokenizer.json of a 128k vocabulary with its merges is ~9 MB; the
// issue-9 audit used 10M merges) and decoding them into map[string]any costs 13–17× their size.
// This file reads them the other way: the document is validated once (encoding/json's scanner,
// which allocates nothing) and then walked in place — every key, token and merge is a slice of
// the caller's bytes, and nothing is allocated that the caller does not keep (a vocabulary's
// keys). Only strings with escapes go through encoding/json.

// jsonValue is one value of a validated document: a slice of it, never written to.
type jsonValue []byte

// parseJSONDoc validates data as one JSON value and returns it. Like the tokenizers library
// (serde_json over a Rust String), it refuses bytes that are not UTF-8.
func parseJSONDoc(data []byte) (jsonValue, error) {
	if !json.Valid(data) {
		var v struct{}
		err := json.Unmarshal(data, &v) // only for its description of the syntax error
		if err == nil {
			err = fmt.Errorf("invalid JSON")
		}
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("not valid JSON: not UTF-8 text")
	}
	return jsonValue(bytes.TrimSpace(data)), nil
}

// kind is the value's first byte: '{', '[', '"', 't', 'f', 'n', or a digit or '-' for a number;
// 0 for an absent value (nil).
func (v jsonValue) kind() byte {
	if len(v) == 0 {
		return 0
	}
	return v[0]
}

// typeName names the value's type as the messages of this package do.
func (v jsonValue) typeName() string {
	switch v.kind() {
	case 0, 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

func (v jsonValue) isNull() bool { return len(v) == 0 || string(v) == "null" }

// is reports whether the value is exactly this text (true, a key…), without allocating.
func (v jsonValue) is(text string) bool { return string(v) == text }

// strBytes returns a string value's content, decoded: a slice of the document unless it has
// escapes. ok is false for other values.
func (v jsonValue) strBytes() ([]byte, bool) {
	if v.kind() != '"' {
		return nil, false
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner, true
	}
	var out string
	if err := json.Unmarshal(v, &out); err != nil {
		return nil, false // unreachable for a validated document
	}
	return []byte(out), true
}

// str is strBytes as a new string.
func (v jsonValue) str() (string, bool) {
	b, ok := v.strBytes()
	return string(b), ok
}

// skipWS returns the index of the first non-space byte of s at or after i.
func skipWS(s jsonValue, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t') {
		i++
	}
	return i
}

// valueEnd returns the index just past the value that starts at i of a validated document.
func valueEnd(s jsonValue, i int) int {
	switch s[i] {
	case '"':
		for i++; ; i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch s[i] {
			case '"':
				i = valueEnd(s, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(s) && bytes.IndexByte([]byte(",]} \n\r\t"), s[i]) < 0 {
		i++
	}
	return i
}

// eachElement calls fn with every element of a list, in order, until fn returns an error.
func (v jsonValue) eachElement(fn func(i int, e jsonValue) error) error {
	for i, n := skipWS(v, 1), 0; v[i] != ']'; n++ {
		end := valueEnd(v, i)
		if err := fn(n, v[i:end]); err != nil {
			return err
		}
		if i = skipWS(v, end); v[i] == ',' {
			i = skipWS(v, i+1)
		}
	}
	return nil
}

// eachMember calls fn with every member of an object, in order, until fn returns an error. The
// key is a slice of the document (or, with escapes, a decoded copy): copy it to keep it.
func (v jsonValue) eachMember(fn func(key []byte, val jsonValue) error) error {
	for i := skipWS(v, 1); v[i] != '}'; {
		kend := valueEnd(v, i)
		key, _ := v[i:kend].strBytes()
		i = skipWS(v, skipWS(v, kend)+1) // past the ':'
		end := valueEnd(v, i)
		if err := fn(key, v[i:end]); err != nil {
			return err
		}
		if i = skipWS(v, end); v[i] == ',' {
			i = skipWS(v, i+1)
		}
	}
	return nil
}

// members returns the values of the named members of an object (nil when absent; the last one
// when a name repeats, as a map decoder keeps).
func (v jsonValue) members(names ...string) []jsonValue {
	out := make([]jsonValue, len(names))
	_ = v.eachMember(func(key []byte, val jsonValue) error {
		for j, n := range names {
			if string(key) == n {
				out[j] = val
			}
		}
		return nil
	})
	return out
}

// count is the number of elements of a list or members of an object.
func (v jsonValue) count() int {
	n := 0
	if v.kind() == '[' {
		_ = v.eachElement(func(int, jsonValue) error { n++; return nil })
	} else if v.kind() == '{' {
		_ = v.eachMember(func([]byte, jsonValue) error { n++; return nil })
	}
	return n
}
