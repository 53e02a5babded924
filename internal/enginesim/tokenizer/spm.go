package tokenizer

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"lifeboat/manifest/modelrepo"
)

// spaceSym is SentencePiece's whitespace symbol (U+2581).
const spaceSym = "▁"

// byteFallbackPenalty is the score of one byte-fallback token: far below any real piece, so bytes
// are used only where no piece covers the text.
const byteFallbackPenalty = -1e6

// SentencePiece is a simple SentencePiece-style tokenizer over a tokenizer.model's pieces: spaces
// become "▁", control and user-defined pieces found in the text are split out first, the rest is
// segmented by Viterbi over the normal and user-defined pieces' scores (ties: fewer tokens, then the
// earlier split), and what no piece covers falls back to <0xNN> byte pieces, else the unknown piece.
// It adds no dummy-prefix "▁", so Decode(Encode(s)) == s for text without control pieces, and
// decoding token by token concatenates to the whole decode. It is deterministic and read-only after
// construction, so safe for concurrent use.
type SentencePiece struct {
	Source  string
	pieces  []modelrepo.SentencePiecePiece
	vocab   map[string]int // normal and user-defined pieces, first id wins
	literal map[string]int // control and user-defined pieces split out of the text
	literRe *regexp.Regexp // nil when there are none
	byteID  [256]int       // -1 when the model has no <0xNN> piece for the byte
	byteOf  map[int]byte   // byte piece id -> its byte
	unk     int            // -1 when none
	bos     int            // -1 when none
	eos     int            // -1 when none
	maxLen  int            // longest piece in bytes
}

// NewSentencePiece builds the tokenizer from tokenizer.model bytes.
func NewSentencePiece(data []byte, name string) (*SentencePiece, error) {
	pieces, err := modelrepo.SentencePiecePieces(data, name)
	if err != nil {
		return nil, err
	}
	t := &SentencePiece{Source: name, pieces: pieces, vocab: map[string]int{}, literal: map[string]int{}, byteOf: map[int]byte{}, unk: -1, bos: -1, eos: -1}
	for i := range t.byteID {
		t.byteID[i] = -1
	}
	var alts []string
	for id, p := range pieces {
		switch p.Type {
		case modelrepo.SPMUnknown:
			if t.unk < 0 {
				t.unk = id
			}
		case modelrepo.SPMControl:
			switch p.Piece {
			case "<s>":
				if t.bos < 0 {
					t.bos = id
				}
			case "</s>":
				if t.eos < 0 {
					t.eos = id
				}
			}
		case modelrepo.SPMByte:
			var b int
			if len(p.Piece) == 6 && strings.HasPrefix(p.Piece, "<0x") && p.Piece[5] == '>' {
				if _, err := fmt.Sscanf(p.Piece[3:5], "%02X", &b); err == nil {
					t.byteOf[id] = byte(b)
					if t.byteID[b] < 0 {
						t.byteID[b] = id
					}
				}
			}
		}
		if p.Piece == "" {
			continue
		}
		if p.Type == modelrepo.SPMNormal || p.Type == modelrepo.SPMUserDefined {
			if _, ok := t.vocab[p.Piece]; !ok {
				t.vocab[p.Piece] = id
				t.maxLen = max(t.maxLen, len(p.Piece))
			}
		}
		if p.Type == modelrepo.SPMControl || p.Type == modelrepo.SPMUserDefined {
			if _, ok := t.literal[p.Piece]; !ok {
				t.literal[p.Piece] = id
				alts = append(alts, p.Piece)
			}
		}
	}
	if len(alts) > 0 {
		sort.SliceStable(alts, func(i, j int) bool { return len(alts[i]) > len(alts[j]) })
		q := make([]string, len(alts))
		for i, a := range alts {
			q[i] = regexp.QuoteMeta(a)
		}
		t.literRe = regexp.MustCompile(strings.Join(q, "|"))
	}
	return t, nil
}

// BOS and EOS are the <s> / </s> control pieces ("" when absent).
func (t *SentencePiece) BOS() string { return t.pieceOr(t.bos) }
func (t *SentencePiece) EOS() string { return t.pieceOr(t.eos) }

func (t *SentencePiece) pieceOr(id int) string {
	if id < 0 {
		return ""
	}
	return t.pieces[id].Piece
}

// VocabSize is the number of pieces.
func (t *SentencePiece) VocabSize() int { return len(t.pieces) }

// TokenID returns the id of a piece (the first, when a piece string repeats).
func (t *SentencePiece) TokenID(tok string) (int, bool) {
	if id, ok := t.literal[tok]; ok {
		return id, true
	}
	if id, ok := t.vocab[tok]; ok {
		return id, true
	}
	for id, p := range t.pieces {
		if p.Piece == tok {
			return id, true
		}
	}
	return 0, false
}

// IsSpecial reports whether id is a control or unknown piece.
func (t *SentencePiece) IsSpecial(id int) bool {
	if id < 0 || id >= len(t.pieces) {
		return false
	}
	typ := t.pieces[id].Type
	return typ == modelrepo.SPMControl || typ == modelrepo.SPMUnknown
}

// Encode tokenizes text; addSpecial puts <s> first (as Llama's add_bos_token does).
func (t *SentencePiece) Encode(text string, addSpecial bool) ([]int, error) {
	var out []int
	if addSpecial && t.bos >= 0 {
		out = append(out, t.bos)
	}
	pos := 0
	if t.literRe != nil {
		for _, m := range t.literRe.FindAllStringIndex(text, -1) {
			out = t.encodePlain(out, text[pos:m[0]])
			out = append(out, t.literal[text[m[0]:m[1]]])
			pos = m[1]
		}
	}
	return t.encodePlain(out, text[pos:]), nil
}

// encodePlain appends the Viterbi segmentation of text (no control pieces in it) to out.
func (t *SentencePiece) encodePlain(out []int, text string) []int {
	if text == "" {
		return out
	}
	s := strings.ReplaceAll(text, " ", spaceSym)
	n := len(s)
	type node struct {
		score  float64
		tokens int
		prev   int   // start of the last edge
		ids    []int // the last edge's ids (one piece, or byte fallbacks / unk)
	}
	best := make([]node, n+1)
	for i := 1; i <= n; i++ {
		best[i].score = math.Inf(-1)
	}
	better := func(a, b node) bool {
		return a.score > b.score || a.score == b.score && a.tokens < b.tokens
	}
	for i := 0; i < n; i++ {
		if math.IsInf(best[i].score, -1) || !utf8.RuneStart(s[i]) {
			continue
		}
		matched := false
		for j := i + 1; j <= n && j-i <= t.maxLen; j++ {
			id, ok := t.vocab[s[i:j]]
			if !ok {
				continue
			}
			matched = matched || j == i+runeLen(s[i:])
			c := node{score: best[i].score + float64(t.pieces[id].Score), tokens: best[i].tokens + 1, prev: i, ids: []int{id}}
			if better(c, best[j]) {
				best[j] = c
			}
		}
		if matched {
			continue
		}
		// No piece is exactly this character: byte fallback, else unk.
		j := i + runeLen(s[i:])
		var ids []int
		for k := i; k < j; k++ {
			if t.byteID[s[k]] < 0 {
				ids = nil
				break
			}
			ids = append(ids, t.byteID[s[k]])
		}
		if ids == nil {
			ids = []int{max(t.unk, 0)}
		}
		c := node{score: best[i].score + byteFallbackPenalty*float64(len(ids)), tokens: best[i].tokens + len(ids), prev: i, ids: ids}
		if better(c, best[j]) {
			best[j] = c
		}
	}
	var rev [][]int
	for j := n; j > 0; j = best[j].prev {
		rev = append(rev, best[j].ids)
	}
	for k := len(rev) - 1; k >= 0; k-- {
		out = append(out, rev[k]...)
	}
	return out
}

func runeLen(s string) int {
	_, n := utf8.DecodeRuneInString(s)
	return n
}

// Decode reverses Encode: pieces joined, "▁" back to spaces, byte pieces to their bytes.
// skipSpecial drops control and unknown pieces; ids outside the vocabulary are dropped.
func (t *SentencePiece) Decode(ids []int, skipSpecial bool) string {
	var b strings.Builder
	for _, id := range ids {
		if id < 0 || id >= len(t.pieces) || skipSpecial && t.IsSpecial(id) {
			continue
		}
		p := t.pieces[id]
		if v, ok := t.byteOf[id]; ok {
			b.WriteByte(v)
			continue
		}
		if p.Type == modelrepo.SPMControl || p.Type == modelrepo.SPMUnknown || p.Type == modelrepo.SPMUserDefined {
			b.WriteString(p.Piece)
			continue
		}
		b.WriteString(strings.ReplaceAll(p.Piece, spaceSym, " "))
	}
	return b.String()
}

// TokenText is the decoded text of one token.
func (t *SentencePiece) TokenText(id int) string { return t.Decode([]int{id}, false) }
