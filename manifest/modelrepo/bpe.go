package modelrepo

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// BPETokenizer is a byte-level BPE tokenizer loaded from a Hugging Face tokenizer.json (the GPT-2
// / Llama 3 / Qwen family): added tokens split out first, then the pre-tokenizer (Split with a
// regex, ByteLevel), then BPE merges by rank over the byte-to-unicode alphabet. The Split regex is
// compiled with regexp2 because Llama 3's pattern uses a lookahead (`\s+(?!\S)`) that Go's regexp
// does not support.
//
// It is safe for concurrent use.
type BPETokenizer struct {
	Source string

	vocab        map[string]int
	byID         map[int]string // model vocabulary and added tokens
	special      map[int]bool   // added tokens marked special
	ranks        map[[2]string]int
	ignoreMerges bool

	splits       []*regexp2.Regexp // Split pre-tokenizers, applied in order (behavior Isolated)
	byteLevel    bool              // a ByteLevel pre-tokenizer is present
	prefixSpace  bool              // ByteLevel add_prefix_space
	addedRe      *regexp.Regexp    // matches any added token; nil when none
	addedIDs     map[string]int
	prefix       []int // ids the post-processor puts before a single sequence
	suffix       []int // and after it
	byteToSym    [256]string
	symToByte    map[rune]byte
	cacheMu      sync.Mutex
	cache        map[string][]int
	regexTimeout time.Duration
}

// gpt2Pattern is the regex a ByteLevel pre-tokenizer applies when use_regex is true.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// maxBPEWordCache bounds the per-word cache.
const maxBPEWordCache = 1 << 16

// ParseBPETokenizer loads a byte-level BPE tokenizer.json. It fails, naming the file, on anything
// it cannot reproduce faithfully: a model other than BPE, a pre-tokenizer other than Split /
// ByteLevel / Sequence of them, a normalizer, a merge whose parts are not in the vocabulary.
func ParseBPETokenizer(data []byte, name string) (*BPETokenizer, error) {
	if _, err := ParseTokenizerJSON(data, name); err != nil {
		return nil, err
	}
	var doc struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		Normalizer    json.RawMessage `json:"normalizer"`
		PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
		PostProcessor json.RawMessage `json:"post_processor"`
		Decoder       json.RawMessage `json:"decoder"`
		Model         struct {
			Type         string          `json:"type"`
			Vocab        map[string]int  `json:"vocab"`
			Merges       json.RawMessage `json:"merges"`
			IgnoreMerges bool            `json:"ignore_merges"`
			ByteFallback bool            `json:"byte_fallback"`
		} `json:"model"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if doc.Model.Type != "" && doc.Model.Type != "BPE" {
		return nil, fmt.Errorf("%s: model type %s is not byte-level BPE", name, doc.Model.Type)
	}
	if !isJSONNull(doc.Normalizer) && len(doc.Normalizer) > 0 {
		var n struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(doc.Normalizer, &n)
		if n.Type != "NFC" { // NFC is the identity on the text this tokenizer is used with
			return nil, fmt.Errorf("%s: normalizer %q is not supported by the byte-level BPE tokenizer", name, n.Type)
		}
	}
	t := &BPETokenizer{
		Source:       name,
		vocab:        doc.Model.Vocab,
		byID:         make(map[int]string, len(doc.Model.Vocab)+len(doc.AddedTokens)),
		special:      map[int]bool{},
		ranks:        map[[2]string]int{},
		ignoreMerges: doc.Model.IgnoreMerges,
		addedIDs:     map[string]int{},
		symToByte:    map[rune]byte{},
		cache:        map[string][]int{},
		regexTimeout: 2 * time.Second,
	}
	for tok, id := range t.vocab {
		t.byID[id] = tok
	}
	merges, err := parseMergesRaw(doc.Model.Merges)
	if err != nil {
		return nil, fmt.Errorf("%s: model.merges: %v", name, err)
	}
	for i, m := range merges {
		if _, ok := t.ranks[m]; !ok {
			t.ranks[m] = i
		}
	}
	var alts []string
	for _, a := range doc.AddedTokens {
		if a.Content == "" {
			continue
		}
		t.byID[a.ID] = a.Content
		t.addedIDs[a.Content] = a.ID
		if a.Special {
			t.special[a.ID] = true
		}
		alts = append(alts, a.Content)
	}
	if len(alts) > 0 {
		sort.Slice(alts, func(i, j int) bool { return len(alts[i]) > len(alts[j]) })
		q := make([]string, len(alts))
		for i, a := range alts {
			q[i] = regexp.QuoteMeta(a)
		}
		t.addedRe = regexp.MustCompile(strings.Join(q, "|"))
	}
	sym := byteLevelAlphabet()
	t.byteToSym = sym
	for b, s := range sym {
		r, _ := utf8.DecodeRuneInString(s)
		t.symToByte[r] = byte(b)
	}
	if err := t.preTokenizer(doc.PreTokenizer, 0); err != nil {
		return nil, fmt.Errorf("%s: pre_tokenizer: %v", name, err)
	}
	if !t.byteLevel {
		return nil, fmt.Errorf("%s: no ByteLevel pre-tokenizer: not a byte-level BPE tokenizer", name)
	}
	if err := t.postProcessor(doc.PostProcessor, 0); err != nil {
		return nil, fmt.Errorf("%s: post_processor: %v", name, err)
	}
	// Every byte must be encodable, else Encode could not represent some inputs.
	for b := 0; b < 256; b++ {
		if _, ok := t.vocab[sym[b]]; !ok {
			return nil, fmt.Errorf("%s: byte symbol %q (byte 0x%02x) is not in the vocabulary", name, sym[b], b)
		}
	}
	return t, nil
}

func parseMergesRaw(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || isJSONNull(raw) {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	out := make([][2]string, 0, len(list))
	for i, e := range list {
		var s string
		if json.Unmarshal(e, &s) == nil {
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("[%d]: %q is not \"a b\"", i, s)
			}
			out = append(out, [2]string{a, b})
			continue
		}
		var p []string
		if err := json.Unmarshal(e, &p); err != nil || len(p) != 2 {
			return nil, fmt.Errorf("[%d]: want \"a b\" or [a, b]", i)
		}
		out = append(out, [2]string{p[0], p[1]})
	}
	return out, nil
}

// preTokenizer reads the pre-tokenizer tree.
func (t *BPETokenizer) preTokenizer(raw json.RawMessage, depth int) error {
	if len(raw) == 0 || isJSONNull(raw) {
		return nil
	}
	if depth > 8 {
		return fmt.Errorf("nested too deeply")
	}
	var p struct {
		Type           string            `json:"type"`
		Pretokenizers  []json.RawMessage `json:"pretokenizers"`
		Pattern        map[string]string `json:"pattern"`
		Behavior       string            `json:"behavior"`
		Invert         bool              `json:"invert"`
		AddPrefixSpace bool              `json:"add_prefix_space"`
		UseRegex       *bool             `json:"use_regex"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	switch p.Type {
	case "Sequence":
		for _, c := range p.Pretokenizers {
			if err := t.preTokenizer(c, depth+1); err != nil {
				return err
			}
		}
	case "Split":
		if p.Behavior != "Isolated" || p.Invert {
			return fmt.Errorf("Split with behavior %q (invert %v) is not supported", p.Behavior, p.Invert)
		}
		pat := p.Pattern["Regex"]
		if s, ok := p.Pattern["String"]; ok {
			pat = regexp2.Escape(s)
		}
		if pat == "" {
			return fmt.Errorf("Split without a pattern")
		}
		re, err := regexp2.Compile(pat, regexp2.Unicode)
		if err != nil {
			return fmt.Errorf("Split pattern %q: %v", pat, err)
		}
		re.MatchTimeout = t.regexTimeout
		t.splits = append(t.splits, re)
	case "ByteLevel":
		t.byteLevel = true
		t.prefixSpace = p.AddPrefixSpace
		if p.UseRegex == nil || *p.UseRegex {
			re := regexp2.MustCompile(gpt2Pattern, regexp2.Unicode)
			re.MatchTimeout = t.regexTimeout
			t.splits = append(t.splits, re)
		}
	default:
		return fmt.Errorf("type %q is not supported", p.Type)
	}
	return nil
}

// postProcessor reads the TemplateProcessing "single" template: special tokens around $A.
func (t *BPETokenizer) postProcessor(raw json.RawMessage, depth int) error {
	if len(raw) == 0 || isJSONNull(raw) || depth > 8 {
		return nil
	}
	var p struct {
		Type       string            `json:"type"`
		Processors []json.RawMessage `json:"processors"`
		Single     []map[string]struct {
			ID string `json:"id"`
		} `json:"single"`
		SpecialTokens map[string]struct {
			IDs []int `json:"ids"`
		} `json:"special_tokens"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	switch p.Type {
	case "Sequence":
		for _, c := range p.Processors {
			if err := t.postProcessor(c, depth+1); err != nil {
				return err
			}
		}
	case "TemplateProcessing":
		seenSeq := false
		for _, piece := range p.Single {
			if _, ok := piece["Sequence"]; ok {
				seenSeq = true
				continue
			}
			st, ok := piece["SpecialToken"]
			if !ok {
				continue
			}
			ids := p.SpecialTokens[st.ID].IDs
			if len(ids) == 0 {
				return fmt.Errorf("special token %q has no ids", st.ID)
			}
			if seenSeq {
				t.suffix = append(t.suffix, ids...)
			} else {
				t.prefix = append(t.prefix, ids...)
			}
		}
	}
	return nil
}

// byteLevelAlphabet is GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to
// code points from 256 up, in byte order.
func byteLevelAlphabet() (sym [256]string) {
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			sym[b] = string(rune(b))
		} else {
			sym[b] = string(rune(256 + n))
			n++
		}
	}
	return sym
}

// VocabSize is the largest token id + 1 over the vocabulary and added tokens.
func (t *BPETokenizer) VocabSize() int {
	m := -1
	for id := range t.byID {
		m = max(m, id)
	}
	return m + 1
}

// TokenID returns the id of a vocabulary entry or added token.
func (t *BPETokenizer) TokenID(tok string) (int, bool) {
	if id, ok := t.addedIDs[tok]; ok {
		return id, true
	}
	id, ok := t.vocab[tok]
	return id, ok
}

// IsSpecial reports whether id is a special added token.
func (t *BPETokenizer) IsSpecial(id int) bool { return t.special[id] }

// Encode tokenizes text. addSpecial adds the post-processor's special tokens (Llama 3: BOS).
func (t *BPETokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	var out []int
	if addSpecial {
		out = append(out, t.prefix...)
	}
	segments := [][2]int{{0, len(text)}}
	if t.addedRe != nil {
		segments = segments[:0]
		last := 0
		for _, m := range t.addedRe.FindAllStringIndex(text, -1) {
			if m[0] > last {
				segments = append(segments, [2]int{last, m[0]})
			}
			segments = append(segments, [2]int{-1, m[0]}, [2]int{m[0], m[1]}) // marker, then the token
			last = m[1]
		}
		if last < len(text) {
			segments = append(segments, [2]int{last, len(text)})
		}
	}
	for i := 0; i < len(segments); i++ {
		s := segments[i]
		if s[0] == -1 { // the next segment is an added token
			i++
			out = append(out, t.addedIDs[text[segments[i][0]:segments[i][1]]])
			continue
		}
		ids, err := t.encodePlain(text[s[0]:s[1]])
		if err != nil {
			return nil, err
		}
		out = append(out, ids...)
	}
	if addSpecial {
		out = append(out, t.suffix...)
	}
	return out, nil
}

func (t *BPETokenizer) encodePlain(text string) ([]int, error) {
	if text == "" {
		return nil, nil
	}
	if t.prefixSpace && !strings.HasPrefix(text, " ") {
		text = " " + text
	}
	pieces := []string{text}
	for _, re := range t.splits {
		var next []string
		for _, p := range pieces {
			parts, err := splitIsolated(re, p)
			if err != nil {
				return nil, err
			}
			next = append(next, parts...)
		}
		pieces = next
	}
	var out []int
	for _, p := range pieces {
		out = append(out, t.word(p)...)
	}
	return out, nil
}

// splitIsolated splits s into the regex's matches and the gaps between them.
func splitIsolated(re *regexp2.Regexp, s string) ([]string, error) {
	runes := []rune(s)
	var out []string
	last := 0
	m, err := re.FindRunesMatch(runes)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		if m.Length == 0 {
			continue
		}
		if m.Index > last {
			out = append(out, string(runes[last:m.Index]))
		}
		out = append(out, string(runes[m.Index:m.Index+m.Length]))
		last = m.Index + m.Length
	}
	if err != nil {
		return nil, fmt.Errorf("pre-tokenizer regex: %v", err)
	}
	if last < len(runes) {
		out = append(out, string(runes[last:]))
	}
	return out, nil
}

// word runs BPE over one pre-tokenized piece.
func (t *BPETokenizer) word(piece string) []int {
	t.cacheMu.Lock()
	if ids, ok := t.cache[piece]; ok {
		t.cacheMu.Unlock()
		return ids
	}
	t.cacheMu.Unlock()
	syms := make([]string, 0, len(piece))
	var whole strings.Builder
	for i := 0; i < len(piece); i++ {
		s := t.byteToSym[piece[i]]
		syms = append(syms, s)
		whole.WriteString(s)
	}
	var ids []int
	if id, ok := t.vocab[whole.String()]; ok && (t.ignoreMerges || len(syms) == 1) {
		ids = []int{id}
	} else {
		for len(syms) > 1 {
			best, at := -1, -1
			for i := 0; i+1 < len(syms); i++ {
				if r, ok := t.ranks[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < best) {
					best, at = r, i
				}
			}
			if at < 0 {
				break
			}
			pair := [2]string{syms[at], syms[at+1]}
			merged := pair[0] + pair[1]
			next := syms[:0:0]
			for i := 0; i < len(syms); i++ {
				if i+1 < len(syms) && syms[i] == pair[0] && syms[i+1] == pair[1] {
					next = append(next, merged)
					i++
					continue
				}
				next = append(next, syms[i])
			}
			syms = next
		}
		for _, s := range syms {
			if id, ok := t.vocab[s]; ok {
				ids = append(ids, id)
				continue
			}
			// A merge result missing from the vocabulary: fall back to its bytes.
			for _, r := range s {
				ids = append(ids, t.vocab[string(r)])
			}
		}
	}
	t.cacheMu.Lock()
	if len(t.cache) < maxBPEWordCache {
		t.cache[piece] = ids
	}
	t.cacheMu.Unlock()
	return ids
}

// Decode turns ids back into text; skipSpecial drops special added tokens. Unknown ids are skipped.
func (t *BPETokenizer) Decode(ids []int, skipSpecial bool) string {
	var out []byte
	for _, id := range ids {
		tok, ok := t.byID[id]
		if !ok {
			continue
		}
		if _, added := t.addedIDs[tok]; added && t.addedIDs[tok] == id {
			if skipSpecial && t.special[id] {
				continue
			}
			out = append(out, tok...)
			continue
		}
		for _, r := range tok {
			if b, ok := t.symToByte[r]; ok {
				out = append(out, b)
			} else {
				out = utf8.AppendRune(out, r)
			}
		}
	}
	return string(out)
}

// TokenText is the decoded text of one token (its bytes, which may be part of a UTF-8 sequence).
func (t *BPETokenizer) TokenText(id int) string { return t.Decode([]int{id}, false) }
