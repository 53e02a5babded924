package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// HF is a tokenizer.json pipeline: added tokens are split out of the raw text first (leftmost,
// longest), each remaining section is normalized, pre-tokenized and run through the BPE model,
// then the post-processor adds its special tokens. Decoding maps ids to tokens and runs the
// decoder chain. It is safe for concurrent use.
type HF struct {
	Source string

	added      *addedVocab
	normalizer normalizer   // nil: none
	pre        preTokenizer // nil: none
	model      *bpeModel
	post       *postProcessor
	decoder    decoder // nil: tokens joined
	tokens     []string
	special    []bool
	vocabSize  int
}

// jsonDoc is the part of tokenizer.json the pipeline reads.
type jsonDoc struct {
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         bpeConfig       `json:"model"`
}

type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// maxNesting bounds Sequence nesting in normalizers, pre-tokenizers, processors and decoders.
const maxNesting = 16

// FromJSON loads a tokenizer.json. It fails, naming the file and the field, on anything it cannot
// reproduce faithfully: a model other than BPE, a normalizer, pre-tokenizer, post-processor or
// decoder type it does not implement, a merge whose parts or result are not in the vocabulary, an
// id outside 0..2^31.
func FromJSON(data []byte, name string) (*HF, error) {
	var doc jsonDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	t := &HF{Source: name}
	var err error
	if t.model, err = newBPE(&doc.Model); err != nil {
		return nil, fmt.Errorf("%s: model: %w", name, err)
	}
	if t.normalizer, err = parseNormalizer(doc.Normalizer, 0); err != nil {
		return nil, fmt.Errorf("%s: normalizer: %w", name, err)
	}
	if t.pre, err = parsePreTokenizer(doc.PreTokenizer, 0); err != nil {
		return nil, fmt.Errorf("%s: pre_tokenizer: %w", name, err)
	}
	if t.decoder, err = parseDecoder(doc.Decoder, 0); err != nil {
		return nil, fmt.Errorf("%s: decoder: %w", name, err)
	}
	maxID := t.model.maxID
	for i, a := range doc.AddedTokens {
		if a.ID < 0 || a.ID > math.MaxInt32 {
			return nil, fmt.Errorf("%s: added_tokens[%d]: id %d out of range", name, i, a.ID)
		}
		if a.Content == "" {
			return nil, fmt.Errorf("%s: added_tokens[%d]: empty content", name, i)
		}
		maxID = max(maxID, a.ID)
	}
	t.vocabSize = maxID + 1
	t.tokens = make([]string, t.vocabSize)
	t.special = make([]bool, t.vocabSize)
	for tok, id := range t.model.vocab {
		t.tokens[id] = tok
	}
	t.added = newAddedVocab(doc.AddedTokens)
	for _, a := range doc.AddedTokens {
		t.tokens[a.ID] = a.Content
		t.special[a.ID] = a.Special
	}
	if t.post, err = parsePostProcessor(doc.PostProcessor, 0); err != nil {
		return nil, fmt.Errorf("%s: post_processor: %w", name, err)
	}
	for _, id := range append(append([]int{}, t.post.prefix...), t.post.suffix...) {
		if id < 0 || id >= t.vocabSize {
			return nil, fmt.Errorf("%s: post_processor: special token id %d is outside the vocabulary (size %d)", name, id, t.vocabSize)
		}
	}
	return t, nil
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || string(s) == "null"
}

// VocabSize is the largest id + 1 over the model vocabulary and the added tokens.
func (t *HF) VocabSize() int { return t.vocabSize }

// TokenID returns the id of an added token or vocabulary entry.
func (t *HF) TokenID(tok string) (int, bool) {
	if id, ok := t.added.ids[tok]; ok {
		return id, true
	}
	id, ok := t.model.vocab[tok]
	return id, ok
}

// IsSpecial reports whether id is an added token marked special.
func (t *HF) IsSpecial(id int) bool { return id >= 0 && id < len(t.special) && t.special[id] }

// Encode tokenizes text; addSpecial adds the post-processor's tokens.
func (t *HF) Encode(text string, addSpecial bool) ([]int, error) {
	var out []int
	if addSpecial {
		out = append(out, t.post.prefix...)
	}
	for _, sec := range t.added.split(text) {
		if sec.id >= 0 {
			out = append(out, sec.id)
			continue
		}
		s := sec.text
		if s == "" {
			continue
		}
		if t.normalizer != nil {
			var err error
			if s, err = t.normalizer.normalize(s); err != nil {
				return nil, fmt.Errorf("%s: normalizer: %w", t.Source, err)
			}
			if s == "" {
				continue
			}
		}
		pieces := []string{s}
		if t.pre != nil {
			var err error
			if pieces, err = t.pre.split(pieces, sec.start == 0); err != nil {
				return nil, fmt.Errorf("%s: pre_tokenizer: %w", t.Source, err)
			}
		}
		for _, p := range pieces {
			out = t.model.encode(out, p)
		}
	}
	if addSpecial {
		out = append(out, t.post.suffix...)
	}
	return out, nil
}

// Decode maps ids to tokens and runs the decoder chain. Invalid UTF-8 from byte-level tokens is
// kept as bytes, so decoding token by token concatenates to the bytes of the whole.
func (t *HF) Decode(ids []int, skipSpecial bool) string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if id < 0 || id >= len(t.tokens) || t.tokens[id] == "" {
			continue
		}
		if skipSpecial && t.special[id] {
			continue
		}
		toks = append(toks, t.tokens[id])
	}
	if t.decoder == nil {
		return joinSpace(toks)
	}
	var b []byte
	for _, s := range t.decoder.decode(toks) {
		b = append(b, s...)
	}
	return string(b)
}

// TokenText is the decoded text of one token.
func (t *HF) TokenText(id int) string { return t.Decode([]int{id}, false) }

func joinSpace(toks []string) string {
	var b []byte
	for i, s := range toks {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, s...)
	}
	return string(b)
}

// decodeComponent decodes the JSON of one pipeline component (normalizer, pre-tokenizer,
// decoder); ok is false for none (absent or null). Nesting deeper than maxNesting is refused.
func decodeComponent[C any](raw json.RawMessage, depth int) (c C, ok bool, err error) {
	if isNull(raw) {
		return c, false, nil
	}
	if depth > maxNesting {
		return c, false, fmt.Errorf("nested more than %d deep", maxNesting)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, false, err
	}
	return c, true, nil
}

// parseSequence parses the members of a Sequence component, one level deeper, dropping those
// that are none; an error names the member (field[i]).
func parseSequence[T any](field string, raws []json.RawMessage, depth int, parse func(json.RawMessage, int) (T, error)) ([]T, error) {
	var out []T
	for i, r := range raws {
		x, err := parse(r, depth+1)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
		}
		if any(x) != nil {
			out = append(out, x)
		}
	}
	return out, nil
}
