package tokenizer

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// regexTimeout bounds one regex match: a hostile pattern must not hang a request.
const regexTimeout = 2 * time.Second

// pattern is tokenizer.json's {"String": s} or {"Regex": r}. Regexes are compiled with regexp2,
// which supports the lookarounds real pre-tokenizers use (Llama 3's `\s+(?!\S)`) and whose `\s`,
// `\d` and `\p{…}` classes are Unicode, like the Oniguruma regexes of the tokenizers library.
type pattern struct {
	literal string
	re      *regexp2.Regexp
}

func parsePattern(p map[string]string) (*pattern, error) {
	if s, ok := p["String"]; ok {
		if s == "" {
			return nil, fmt.Errorf("pattern.String is empty")
		}
		return &pattern{literal: s}, nil
	}
	r, ok := p["Regex"]
	if !ok {
		return nil, fmt.Errorf("pattern: want {\"String\": …} or {\"Regex\": …}")
	}
	re, err := regexp2.Compile(r, regexp2.Unicode)
	if err != nil {
		return nil, fmt.Errorf("pattern.Regex %q: %v", r, err)
	}
	re.MatchTimeout = regexTimeout
	return &pattern{re: re}, nil
}

// findAll returns the byte ranges of the non-empty, non-overlapping matches in s.
func (p *pattern) findAll(s string) ([][2]int, error) {
	var out [][2]int
	if p.re == nil {
		for i := 0; i < len(s); {
			j := strings.Index(s[i:], p.literal)
			if j < 0 {
				break
			}
			out = append(out, [2]int{i + j, i + j + len(p.literal)})
			i += j + len(p.literal)
		}
		return out, nil
	}
	runes := []rune(s)
	// offs[k] is the byte offset of runes[k].
	offs := make([]int, len(runes)+1)
	b := 0
	for k, r := range runes {
		offs[k] = b
		if r == utf8.RuneError {
			_, n := utf8.DecodeRuneInString(s[b:])
			b += n
		} else {
			b += utf8.RuneLen(r)
		}
	}
	offs[len(runes)] = b
	m, err := p.re.FindRunesMatch(runes)
	for ; m != nil && err == nil; m, err = p.re.FindNextMatch(m) {
		if m.Length > 0 {
			out = append(out, [2]int{offs[m.Index], offs[m.Index+m.Length]})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("regex: %v", err)
	}
	return out, nil
}

// replaceAll replaces every match of p in s with repl.
func (p *pattern) replaceAll(s, repl string) (string, error) {
	if p.re == nil {
		return strings.ReplaceAll(s, p.literal, repl), nil
	}
	ms, err := p.findAll(s)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		b.WriteString(s[last:m[0]])
		b.WriteString(repl)
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String(), nil
}
