package tokenizer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// vocabMap is model.vocab, decoded without reflection: real vocabularies have 32k–262k entries
// and reflection-based decoding dominated start-up.
type vocabMap map[string]int

func (v *vocabMap) UnmarshalJSON(b []byte) error {
	s := &scanner{b: b}
	m := make(map[string]int, len(b)/16)
	if err := s.expect('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		s.skipWS()
		if s.peek() == '}' {
			s.i++
			break
		}
		if !first {
			if err := s.expect(','); err != nil {
				return err
			}
		}
		k, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		n, err := s.int()
		if err != nil {
			return fmt.Errorf("vocab[%q]: %v", k, err)
		}
		m[k] = n
	}
	*v = m
	return nil
}

// parseMergesFast reads merges in either form — ["a b", …] or [["a", "b"], …] — without
// reflection.
func parseMergesFast(b []byte) ([][2]string, error) {
	s := &scanner{b: b}
	if err := s.expect('['); err != nil {
		return nil, err
	}
	out := make([][2]string, 0, len(b)/12)
	for first := true; ; first = false {
		s.skipWS()
		if s.peek() == ']' {
			s.i++
			return out, nil
		}
		if !first {
			if err := s.expect(','); err != nil {
				return nil, err
			}
			s.skipWS()
		}
		if s.peek() == '[' {
			s.i++
			a, err := s.str()
			if err != nil {
				return nil, fmt.Errorf("[%d]: %v", len(out), err)
			}
			if err := s.expect(','); err != nil {
				return nil, fmt.Errorf("[%d]: %v", len(out), err)
			}
			c, err := s.str()
			if err != nil {
				return nil, fmt.Errorf("[%d]: %v", len(out), err)
			}
			if err := s.expect(']'); err != nil {
				return nil, fmt.Errorf("[%d]: want a pair [a, b]", len(out))
			}
			out = append(out, [2]string{a, c})
			continue
		}
		e, err := s.str()
		if err != nil {
			return nil, fmt.Errorf("[%d]: %v", len(out), err)
		}
		a, c, ok := strings.Cut(e, " ")
		if !ok {
			return nil, fmt.Errorf("[%d]: %q is not \"a b\"", len(out), e)
		}
		out = append(out, [2]string{a, c})
	}
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) skipWS() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\n' || s.b[s.i] == '\r' || s.b[s.i] == '\t') {
		s.i++
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) expect(c byte) error {
	s.skipWS()
	if s.peek() != c {
		return fmt.Errorf("offset %d: want %q", s.i, c)
	}
	s.i++
	return nil
}

// str reads a JSON string; the rare one with escapes goes through encoding/json.
func (s *scanner) str() (string, error) {
	s.skipWS()
	if s.peek() != '"' {
		return "", fmt.Errorf("offset %d: want a string", s.i)
	}
	start := s.i
	s.i++
	escaped := false
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			escaped = true
			s.i += 2
			continue
		case '"':
			s.i++
			if !escaped {
				return string(s.b[start+1 : s.i-1]), nil
			}
			var out string
			if err := json.Unmarshal(s.b[start:s.i], &out); err != nil {
				return "", err
			}
			return out, nil
		}
		s.i++
	}
	return "", fmt.Errorf("string never closed")
}

func (s *scanner) int() (int, error) {
	s.skipWS()
	start := s.i
	for s.i < len(s.b) && (s.b[s.i] == '-' || s.b[s.i] >= '0' && s.b[s.i] <= '9') {
		s.i++
	}
	return strconv.Atoi(string(s.b[start:s.i]))
}
