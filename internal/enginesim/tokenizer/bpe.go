package tokenizer

import (
	"bytes"
	"container/heap"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"unicode/utf8"

	"lifeboat/manifest/modelrepo"
)

// bpeConfig is tokenizer.json's model object.
type bpeConfig struct {
	Type                    string          `json:"type"`
	Vocab                   vocabMap        `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Dropout                 *float64        `json:"dropout"`
}

// merge is the result of merging a pair: its rank (priority, lower first) and the new token.
type merge struct{ rank, id int32 }

// bpeModel is the BPE model: merges by rank over the characters of each pre-tokenized word;
// ignore_merges takes a word found whole in the vocabulary as one token; characters outside the
// vocabulary become <0xNN> byte tokens (byte_fallback) or the unknown token (fused when fuse_unk).
type bpeModel struct {
	vocab        map[string]int
	merges       map[[2]int32]merge
	maxID        int
	unk          int // -1: none
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix
	byteIDs      [256]int

	mu    sync.Mutex
	cache map[string][]int
}

// maxWordCache bounds the word cache; maxCachedWord is the longest word cached (bytes).
const (
	maxWordCache  = 1 << 16
	maxCachedWord = 256
)

func newBPE(c *bpeConfig) (*bpeModel, error) {
	if c.Type != "" && c.Type != "BPE" {
		return nil, fmt.Errorf("type %q is not supported (engine-sim implements BPE)", c.Type)
	}
	if c.Dropout != nil && *c.Dropout > 0 {
		return nil, fmt.Errorf("dropout %v is not supported", *c.Dropout)
	}
	if len(c.Vocab) == 0 {
		return nil, fmt.Errorf("vocab is missing or empty")
	}
	m := &bpeModel{vocab: c.Vocab, unk: -1, fuseUnk: c.FuseUnk, byteFallback: c.ByteFallback, ignoreMerges: c.IgnoreMerges, cache: map[string][]int{}}
	for tok, id := range c.Vocab {
		if id < 0 || id > math.MaxInt32 {
			return nil, fmt.Errorf("vocab[%q]: id %d out of range", tok, id)
		}
		m.maxID = max(m.maxID, id)
	}
	if c.UnkToken != nil && *c.UnkToken != "" {
		id, ok := c.Vocab[*c.UnkToken]
		if !ok {
			return nil, fmt.Errorf("unk_token %q is not in the vocabulary", *c.UnkToken)
		}
		m.unk = id
	}
	if c.ContinuingSubwordPrefix != nil {
		m.prefix = *c.ContinuingSubwordPrefix
	}
	if c.EndOfWordSuffix != nil {
		m.suffix = *c.EndOfWordSuffix
	}
	for b := range m.byteIDs {
		m.byteIDs[b] = -1
		if id, ok := c.Vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.byteIDs[b] = id
		}
	}
	if err := m.readMerges(c); err != nil {
		return nil, fmt.Errorf("merges: %w", err)
	}
	return m, nil
}

// readMerges builds the merge table from merges in either form — ["a b", …] (tokenizers < 0.20)
// or [["a", "b"], …] — read in place by modelrepo.EachMerge, the reader lint uses too.
func (m *bpeModel) readMerges(c *bpeConfig) error {
	if isNull(c.Merges) {
		m.merges = map[[2]int32]merge{}
		return nil
	}
	m.merges = make(map[[2]int32]merge, len(c.Merges)/16)
	var buf []byte
	return modelrepo.EachMerge(c.Merges, func(i int, pa, pb []byte) error {
		a, aok := c.Vocab[string(pa)]
		b, bok := c.Vocab[string(pb)]
		if !aok || !bok {
			return fmt.Errorf("merges[%d]: %q %q: a part is not in the vocabulary", i, pa, pb)
		}
		buf = append(append(buf[:0], pa...), bytes.TrimPrefix(pb, []byte(m.prefix))...)
		id, ok := c.Vocab[string(buf)]
		if !ok {
			return fmt.Errorf("merges[%d]: %q %q: the merged token %q is not in the vocabulary", i, pa, pb, buf)
		}
		k := [2]int32{int32(a), int32(b)}
		if _, dup := m.merges[k]; !dup {
			m.merges[k] = merge{rank: int32(i), id: int32(id)}
		}
		return nil
	})
}

// vocabMap is model.vocab, read in place by modelrepo.EachVocabEntry (the reader lint uses):
// real vocabularies have 32k–262k entries and reflection-based decoding dominated start-up.
type vocabMap map[string]int

func (v *vocabMap) UnmarshalJSON(b []byte) error {
	m := make(vocabMap, len(b)/16)
	err := modelrepo.EachVocabEntry(b, func(tok []byte, id int64) error {
		m[string(tok)] = int(id)
		return nil
	})
	if err != nil {
		return err
	}
	*v = m
	return nil
}

// encode appends the ids of one pre-tokenized word to out.
func (m *bpeModel) encode(out []int, word string) []int {
	if word == "" {
		return out
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[word]; ok {
			return append(out, id)
		}
	}
	if len(word) <= maxCachedWord {
		m.mu.Lock()
		ids, ok := m.cache[word]
		m.mu.Unlock()
		if ok {
			return append(out, ids...)
		}
	}
	ids := m.merge(m.symbols(word))
	if len(word) <= maxCachedWord {
		m.mu.Lock()
		if len(m.cache) < maxWordCache {
			m.cache[word] = ids
		}
		m.mu.Unlock()
	}
	return append(out, ids...)
}

// symbol is one node of the word being merged. Byte-fallback and unknown tokens are frozen: no
// merge applies to them (they stand for characters outside the vocabulary).
type symbol struct {
	id           int
	prev, next   int
	dead, frozen bool
	unk          bool
}

// symbols turns a word into its initial symbols: one per character, with the subword prefix on
// all but the first and the word suffix on the last; characters outside the vocabulary become
// byte-fallback tokens or the unknown token (consecutive ones fused when fuse_unk).
func (m *bpeModel) symbols(word string) []symbol {
	var syms []symbol
	add := func(s symbol) {
		s.prev, s.next = len(syms)-1, len(syms)+1
		syms = append(syms, s)
	}
	for i := 0; i < len(word); {
		_, n := utf8.DecodeRuneInString(word[i:])
		ch := word[i : i+n]
		if i > 0 && m.prefix != "" {
			ch = m.prefix + ch
		}
		if i+n == len(word) && m.suffix != "" {
			ch += m.suffix
		}
		if id, ok := m.vocab[ch]; ok {
			add(symbol{id: id})
		} else if fb := m.fallback(word[i : i+n]); fb != nil {
			for _, id := range fb {
				add(symbol{id: id, frozen: true})
			}
		} else if m.unk >= 0 && !(m.fuseUnk && len(syms) > 0 && syms[len(syms)-1].unk) {
			add(symbol{id: m.unk, frozen: true, unk: true})
		}
		i += n
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	return syms
}

// fallback returns the <0xNN> ids of s's bytes when byte_fallback is on and all exist, else nil.
func (m *bpeModel) fallback(s string) []int {
	if !m.byteFallback {
		return nil
	}
	ids := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		if ids[i] = m.byteIDs[s[i]]; ids[i] < 0 {
			return nil
		}
	}
	return ids
}

// merge applies the merges by rank (ties: leftmost first) and returns the ids.
func (m *bpeModel) merge(syms []symbol) []int {
	h := &pairHeap{}
	push := func(pos int) {
		s := syms[pos]
		if s.frozen || s.next < 0 || syms[s.next].frozen {
			return
		}
		if mg, ok := m.merges[[2]int32{int32(s.id), int32(syms[s.next].id)}]; ok {
			heap.Push(h, pairEntry{rank: mg.rank, pos: int32(pos), id: mg.id})
		}
	}
	for i := range syms {
		push(i)
	}
	for h.Len() > 0 {
		e := heap.Pop(h).(pairEntry)
		s := &syms[e.pos]
		if s.dead || s.next < 0 {
			continue
		}
		nx := &syms[s.next]
		if mg, ok := m.merges[[2]int32{int32(s.id), int32(nx.id)}]; !ok || mg.rank != e.rank || s.frozen || nx.frozen {
			continue
		}
		s.id = int(e.id)
		nx.dead = true
		s.next = nx.next
		if s.next >= 0 {
			syms[s.next].prev = int(e.pos)
		}
		if s.prev >= 0 {
			push(s.prev)
		}
		push(int(e.pos))
	}
	var ids []int
	for i := range syms {
		if syms[i].dead {
			continue
		}
		ids = append(ids, syms[i].id)
	}
	return ids
}

type pairEntry struct{ rank, pos, id int32 }

type pairHeap []pairEntry

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(i, j int) bool {
	return h[i].rank < h[j].rank || h[i].rank == h[j].rank && h[i].pos < h[j].pos
}
func (h pairHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pairEntry)) }
func (h *pairHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
