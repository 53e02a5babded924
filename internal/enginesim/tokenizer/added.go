package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedVocab splits added tokens out of raw text: at each position the longest added token that
// starts there wins (leftmost-longest, as the tokenizers library's matcher does).
type addedVocab struct {
	ids   map[string]int
	props map[string]addedToken
	nodes []trieNode // nodes[0] is the root
}

type trieNode struct {
	next map[byte]int32
	tok  string // the added token ending here, "" for none
}

func newAddedVocab(toks []addedToken) *addedVocab {
	a := &addedVocab{ids: map[string]int{}, props: map[string]addedToken{}, nodes: []trieNode{{}}}
	for _, t := range toks {
		if _, dup := a.ids[t.Content]; dup {
			continue // the first entry wins
		}
		a.ids[t.Content] = t.ID
		a.props[t.Content] = t
		n := int32(0)
		for i := 0; i < len(t.Content); i++ {
			c := t.Content[i]
			nx, ok := a.nodes[n].next[c]
			if !ok {
				if a.nodes[n].next == nil {
					a.nodes[n].next = map[byte]int32{}
				}
				nx = int32(len(a.nodes))
				a.nodes[n].next[c] = nx
				a.nodes = append(a.nodes, trieNode{})
			}
			n = nx
		}
		a.nodes[n].tok = t.Content
	}
	return a
}

// section is a piece of the input: an added token (id >= 0) or text to run through the pipeline.
type section struct {
	text  string
	id    int
	start int // byte offset in the input
}

// longestAt returns the longest added token starting at s[i:], or "".
func (a *addedVocab) longestAt(s string, i int) string {
	best, n := "", int32(0)
	for j := i; j < len(s); j++ {
		nx, ok := a.nodes[n].next[s[j]]
		if !ok {
			break
		}
		n = nx
		if a.nodes[n].tok != "" {
			best = a.nodes[n].tok
		}
	}
	return best
}

// split cuts text into sections, honouring lstrip / rstrip (whitespace next to the token is
// dropped) and single_word (the token must not touch a word character).
func (a *addedVocab) split(text string) []section {
	if len(a.ids) == 0 {
		return []section{{text: text, id: -1}}
	}
	var out []section
	start := 0
	for i := 0; i < len(text); {
		tok := a.longestAt(text, i)
		if tok == "" || !a.fits(text, i, tok) {
			_, n := utf8.DecodeRuneInString(text[i:])
			i += n
			continue
		}
		p := a.props[tok]
		gap := text[start:i]
		if p.LStrip {
			gap = strings.TrimRightFunc(gap, unicode.IsSpace)
		}
		if gap != "" {
			out = append(out, section{text: gap, id: -1, start: start})
		}
		out = append(out, section{text: tok, id: p.ID, start: i})
		i += len(tok)
		if p.RStrip {
			rest := strings.TrimLeftFunc(text[i:], unicode.IsSpace)
			i = len(text) - len(rest)
		}
		start = i
	}
	if start < len(text) {
		out = append(out, section{text: text[start:], id: -1, start: start})
	}
	return out
}

// fits applies single_word: the match must not be preceded or followed by a word character.
func (a *addedVocab) fits(text string, i int, tok string) bool {
	if !a.props[tok].SingleWord {
		return true
	}
	if r, _ := utf8.DecodeLastRuneInString(text[:i]); i > 0 && isWordRune(r) {
		return false
	}
	if r, _ := utf8.DecodeRuneInString(text[i+len(tok):]); i+len(tok) < len(text) && isWordRune(r) {
		return false
	}
	return true
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
