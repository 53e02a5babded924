package modelrepo

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// TokenizerInfo summarises a parsed tokenizer file.
type TokenizerInfo struct {
	Source string // file it came from
	Model  string // BPE, WordPiece, Unigram, WordLevel, SentencePiece, tiktoken, tekken, vocab.json, vocab.txt
	// Size is the vocabulary the tokenizer can emit: the largest token id + 1 over the model
	// vocabulary and the added tokens. It must not exceed config.json's vocab_size.
	Size int64
	// Entries is the number of entries in the model vocabulary (without added tokens).
	Entries int
	// RegularSize is like Size without the special added tokens: ids that ordinary text can
	// encode to. 0 means the same as Size (formats without added tokens).
	RegularSize int64
	// Special are the added tokens marked special: content by id.
	Special map[int64]string
}

// maxTokenID is the id range of tokenizers (u32).
const maxTokenID = math.MaxUint32

// tokenizerModelTypes are the model types the tokenizers library can load.
var tokenizerModelTypes = []string{"BPE", "WordPiece", "Unigram", "WordLevel"}

// ParseTokenizerJSON validates a fast-tokenizer tokenizer.json the way the tokenizers library
// loads it: a "model" object of a known type whose vocabulary parses (ids are u32), BPE merges
// whose parts and results are in the vocabulary, and added_tokens with ids and contents.
// It reads the document in place (see jsonscan.go): what it allocates is the document once and
// the vocabulary map, whatever the number of merges.
func ParseTokenizerJSON(data []byte, name string) (*TokenizerInfo, error) {
	doc, err := parseJSONDoc(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	switch doc.kind() {
	case 'n':
		return nil, fmt.Errorf("%s: not a JSON object", name)
	case '{':
	default:
		return nil, fmt.Errorf("%s: not valid JSON: want an object, got %s", name, doc.typeName())
	}
	top := doc.members("model", "added_tokens")
	model := top[0]
	if model.isNull() {
		return nil, fmt.Errorf("%s: field model missing", name)
	}
	if model.kind() != '{' {
		return nil, fmt.Errorf("%s: field model: want an object, got %s", name, model.typeName())
	}
	info := &TokenizerInfo{Source: name}
	maxID, err := parseTokenizerModel(model, info)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	maxAdded, maxRegular := int64(-1), int64(-1)
	if raw := top[1]; !raw.isNull() {
		if maxAdded, maxRegular, err = parseAddedTokens(raw, info); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	info.Size = max(maxID, maxAdded) + 1
	info.RegularSize = max(maxID, maxRegular) + 1
	return info, nil
}

// tokenizerModel is the part of tokenizer.json's model object the checks read.
type tokenizerModel struct {
	typ, vocab, merges, prefix, unkID jsonValue
	hasType, hasMerges, hasMaxChars   bool
}

func readTokenizerModel(v jsonValue) tokenizerModel {
	var m tokenizerModel
	_ = v.eachMember(func(key []byte, val jsonValue) error {
		switch string(key) {
		case "type":
			m.typ, m.hasType = val, true
		case "vocab":
			m.vocab = val
		case "merges":
			m.merges, m.hasMerges = val, true
		case "continuing_subword_prefix":
			m.prefix = val
		case "max_input_chars_per_word":
			m.hasMaxChars = true
		case "unk_id":
			m.unkID = val
		}
		return nil
	})
	return m
}

// modelType returns model.type, or infers it from the shape as the tokenizers library does for
// files written before the type tag existed.
func modelType(m tokenizerModel) (string, error) {
	if m.hasType {
		s, ok := m.typ.str()
		if !ok {
			return "", fmt.Errorf("field model.type: want a string, got %s", m.typ.typeName())
		}
		for _, known := range tokenizerModelTypes {
			if s == known {
				return s, nil
			}
		}
		return "", fmt.Errorf("field model.type: %q is not one of %s", s, strings.Join(tokenizerModelTypes, ", "))
	}
	switch m.vocab.kind() {
	case '[':
		return "Unigram", nil
	case '{':
		if m.hasMerges {
			return "BPE", nil
		}
		if m.hasMaxChars {
			return "WordPiece", nil
		}
		return "WordLevel", nil
	default:
		return "", fmt.Errorf("field model.type missing and model.vocab is %s", m.vocab.typeName())
	}
}

// parseTokenizerModel validates the model block and returns its largest token id.
func parseTokenizerModel(v jsonValue, info *TokenizerInfo) (int64, error) {
	m := readTokenizerModel(v)
	typ, err := modelType(m)
	if err != nil {
		return 0, err
	}
	info.Model = typ
	if typ == "Unigram" {
		return parseUnigramVocab(m, info)
	}
	vocab, maxID, err := scanVocab(m.vocab, "model.vocab")
	if err != nil {
		return 0, err
	}
	info.Entries = len(vocab)
	if typ == "BPE" {
		prefix, _ := m.prefix.str()
		if err := checkJSONMerges(m.merges, vocab, prefix); err != nil {
			return 0, err
		}
	}
	return maxID, nil
}

// scanVocab reads a token → id object; ids must be u32. The map is sized once.
func scanVocab(v jsonValue, field string) (map[string]int64, int64, error) {
	if v.kind() != '{' {
		return nil, 0, fmt.Errorf("field %s: want an object of token → id, got %s", field, v.typeName())
	}
	n := v.count()
	if n == 0 {
		return nil, 0, fmt.Errorf("field %s is empty", field)
	}
	vocab := make(map[string]int64, n)
	maxID := int64(-1)
	err := eachVocabEntry(v, field, func(tok []byte, id int64) error {
		vocab[string(tok)] = id // the one copy kept: short keys share 16-byte blocks
		maxID = max(maxID, id)
		return nil
	})
	return vocab, maxID, err
}

// EachVocabEntry reads a tokenizer vocabulary — an object of token → id, as tokenizer.json's
// model.vocab and vocab.json hold — in place, and calls fn with each entry in document order.
// Ids must be integers in the u32 range. tok is a slice of raw (or, with escapes, a decoded
// copy): copy it to keep it. Engine-sim builds its own map with it; lint its checks.
func EachVocabEntry(raw []byte, fn func(tok []byte, id int64) error) error {
	v, err := parseJSONDoc(raw)
	if err != nil {
		return err
	}
	if v.kind() != '{' {
		return fmt.Errorf("field vocab: want an object of token → id, got %s", v.typeName())
	}
	return eachVocabEntry(v, "vocab", fn)
}

func eachVocabEntry(v jsonValue, field string, fn func(tok []byte, id int64) error) error {
	return v.eachMember(func(tok []byte, x jsonValue) error {
		id, err := tokenID(x)
		if err != nil {
			return fmt.Errorf("field %s[%q]: %v", field, tok, err)
		}
		return fn(tok, id)
	})
}

// tokenID checks a JSON value is an integer id in the u32 range.
func tokenID(x jsonValue) (int64, error) {
	if k := x.kind(); k != '-' && (k < '0' || k > '9') {
		return 0, fmt.Errorf("want an integer id, got %s", x.typeName())
	}
	digits := bytes.TrimPrefix(x, []byte("-"))
	id := int64(0)
	ok := len(digits) <= 10 && (x[0] != '-' || string(digits) == "0")
	for i := 0; ok && i < len(digits); i++ {
		c := digits[i]
		ok = c >= '0' && c <= '9'
		id = id*10 + int64(c-'0')
	}
	if !ok || id > maxTokenID {
		return 0, fmt.Errorf("id %s is not an integer in 0..%d", x, int64(maxTokenID))
	}
	return id, nil
}

func parseUnigramVocab(m tokenizerModel, info *TokenizerInfo) (int64, error) {
	if m.vocab.kind() != '[' {
		return 0, fmt.Errorf("field model.vocab: want a list of [piece, score], got %s", m.vocab.typeName())
	}
	n := 0
	err := m.vocab.eachElement(func(i int, e jsonValue) error {
		n++
		if e.kind() != '[' || e.count() != 2 {
			return fmt.Errorf("field model.vocab[%d]: want [piece, score]", i)
		}
		return e.eachElement(func(j int, x jsonValue) error {
			if j == 0 && x.kind() != '"' {
				return fmt.Errorf("field model.vocab[%d][0]: want a string piece, got %s", i, x.typeName())
			}
			if j == 1 && !strings.ContainsRune("-0123456789", rune(x.kind())) {
				return fmt.Errorf("field model.vocab[%d][1]: want a numeric score, got %s", i, x.typeName())
			}
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("field model.vocab is empty")
	}
	if !m.unkID.isNull() {
		id, err := tokenID(m.unkID)
		if err != nil || id >= int64(n) {
			return 0, fmt.Errorf("field model.unk_id: %s is not an index into the %d-entry vocab", m.unkID, n)
		}
	}
	info.Entries = n
	return int64(n) - 1, nil
}

// checkJSONMerges streams BPE merges through the tokenizers library's load check (see
// CheckMerges), without building a list.
func checkJSONMerges(v jsonValue, vocab map[string]int64, prefix string) error {
	var buf []byte
	return eachMerge(v, "model.merges", func(i int, a, b []byte) error {
		return checkMerge(vocab, a, b, prefix, "model.merges", i, &buf)
	})
}

// EachMerge reads tokenizer.json's BPE merges in place — "a b" strings (split at the first
// space, tokenizers < 0.20) or ["a", "b"] pairs — and calls fn with the parts of each, in rank
// order. null is no merges. a and b are slices of raw (or decoded copies): copy them to keep them.
func EachMerge(raw []byte, fn func(i int, a, b []byte) error) error {
	v, err := parseJSONDoc(raw)
	if err != nil {
		return err
	}
	return eachMerge(v, "merges", fn)
}

func eachMerge(v jsonValue, field string, fn func(i int, a, b []byte) error) error {
	if v.isNull() {
		return nil
	}
	if v.kind() != '[' {
		return fmt.Errorf("field %s: want a list, got %s", field, v.typeName())
	}
	return v.eachElement(func(i int, e jsonValue) error {
		var a, b []byte
		switch e.kind() {
		case '"':
			x, _ := e.strBytes()
			var ok bool
			if a, b, ok = bytes.Cut(x, []byte(" ")); !ok {
				return fmt.Errorf("field %s[%d]: %q is not two tokens separated by a space", field, i, x)
			}
		case '[':
			if n := e.count(); n != 2 {
				return fmt.Errorf("field %s[%d]: want a pair, got %d elements", field, i, n)
			}
			var aok, bok bool
			_ = e.eachElement(func(j int, x jsonValue) error {
				if j == 0 {
					a, aok = x.strBytes()
				} else {
					b, bok = x.strBytes()
				}
				return nil
			})
			if !aok || !bok {
				return fmt.Errorf("field %s[%d]: want a pair of strings", field, i)
			}
		default:
			return fmt.Errorf("field %s[%d]: want a string or a pair, got %s", field, i, e.typeName())
		}
		return fn(i, a, b)
	})
}

// CheckMerges applies the tokenizers library's BPE load check: both parts of every merge and the
// merged token (the second part without the continuing-subword prefix) must be in the vocabulary.
func CheckMerges(vocab map[string]int64, merges [][2]string, prefix, field string) error {
	var buf []byte
	for i, mg := range merges {
		if err := checkMerge(vocab, mg[0], mg[1], prefix, field, i, &buf); err != nil {
			return err
		}
	}
	return nil
}

// checkMerge is CheckMerges for one merge, of strings or of slices of a document; buf is scratch
// space for the merged token, so that the check allocates nothing.
func checkMerge[T ~string | ~[]byte](vocab map[string]int64, a, b T, prefix, field string, i int, buf *[]byte) error {
	for _, part := range [2]T{a, b} {
		if _, ok := vocab[string(part)]; !ok {
			return fmt.Errorf("field %s[%d] (%q %q): token %q is not in the vocabulary", field, i, a, b, part)
		}
	}
	rest := b
	if len(prefix) > 0 && len(b) >= len(prefix) {
		rest = b[len(prefix):]
	}
	*buf = append(append((*buf)[:0], a...), rest...)
	if _, ok := vocab[string(*buf)]; !ok {
		return fmt.Errorf("field %s[%d] (%q %q): merged token %q is not in the vocabulary", field, i, a, b, *buf)
	}
	return nil
}

// parseAddedTokens reads tokenizer.json's added_tokens list and returns the largest id.
// parseAddedTokens returns the largest added-token id, and the largest of the non-special ones.
func parseAddedTokens(v jsonValue, info *TokenizerInfo) (int64, int64, error) {
	if v.kind() != '[' {
		return 0, 0, fmt.Errorf("field added_tokens: want a list, got %s", v.typeName())
	}
	maxID, maxRegular := int64(-1), int64(-1)
	err := v.eachElement(func(i int, e jsonValue) error {
		if e.kind() != '{' {
			return fmt.Errorf("field added_tokens[%d]: want an object, got %s", i, e.typeName())
		}
		f := e.members("id", "content", "special")
		id, err := tokenID(f[0])
		if err != nil {
			return fmt.Errorf("field added_tokens[%d].id: %v", i, err)
		}
		content, ok := f[1].str()
		if !ok {
			return fmt.Errorf("field added_tokens[%d].content: want a string, got %s", i, f[1].typeName())
		}
		maxID = max(maxID, id)
		if !f[2].is("true") {
			maxRegular = max(maxRegular, id)
		} else {
			if info.Special == nil {
				info.Special = map[int64]string{}
			}
			info.Special[id] = content
		}
		return nil
	})
	return maxID, maxRegular, err
}

// tokenIDOf is tokenID for a value decoded with UseNumber (tekken.json).
func tokenIDOf(x any) (int64, error) {
	if n, ok := x.(json.Number); ok {
		return tokenID(jsonValue(n.String()))
	}
	return 0, fmt.Errorf("want an integer id, got %s", typeName(x))
}

// ParseVocabJSON parses a slow BPE tokenizer's vocab.json: an object of token → id.
func ParseVocabJSON(data []byte, name string) (map[string]int64, *TokenizerInfo, error) {
	doc, err := parseJSONDoc(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", name, err)
	}
	vocab, maxID, err := scanVocab(doc, "vocab")
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return vocab, &TokenizerInfo{Source: name, Model: "vocab.json", Size: maxID + 1, Entries: len(vocab)}, nil
}

// ParseMergesTXT parses merges.txt: an optional "#version" line, then one "a b" pair a line.
func ParseMergesTXT(data []byte, name string) ([][2]string, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%s: not UTF-8 text", name)
	}
	var out [][2]string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || (i == 0 && strings.HasPrefix(line, "#version")) {
			continue
		}
		parts := strings.Split(line, " ")
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			return nil, fmt.Errorf("%s: line %d: %q is not two tokens separated by one space", name, i+1, line)
		}
		out = append(out, [2]string{parts[0], parts[1]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no merges", name)
	}
	return out, nil
}

// ParseVocabTXT parses a WordPiece vocab.txt: one token a line, the line number being the id.
func ParseVocabTXT(data []byte, name string) (*TokenizerInfo, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%s: not UTF-8 text", name)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) == 0 || (len(lines) == 1 && lines[0] == "") {
		return nil, fmt.Errorf("%s: no tokens", name)
	}
	return &TokenizerInfo{Source: name, Model: "vocab.txt", Size: int64(len(lines)), Entries: len(lines)}, nil
}

// ParseTiktoken parses a tiktoken BPE file: "<base64 token> <rank>" a line.
func ParseTiktoken(data []byte, name string) (*TokenizerInfo, error) {
	maxRank, n := int64(-1), 0
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		tok, rank, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("%s: line %d: want \"<base64 token> <rank>\"", name, i+1)
		}
		if _, err := base64.StdEncoding.DecodeString(tok); err != nil {
			return nil, fmt.Errorf("%s: line %d: token is not base64: %v", name, i+1, err)
		}
		r, err := strconv.ParseInt(rank, 10, 64)
		if err != nil || r < 0 || r > maxTokenID {
			return nil, fmt.Errorf("%s: line %d: rank %q is not an integer in 0..%d", name, i+1, rank, int64(maxTokenID))
		}
		maxRank = max(maxRank, r)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no tokens", name)
	}
	return &TokenizerInfo{Source: name, Model: "tiktoken", Size: maxRank + 1, Entries: n}, nil
}

// ParseTekkenJSON parses Mistral's tekken.json: {"config": {…}, "vocab": [{"rank", "token_bytes",
// …}], "special_tokens": […]}. Its size is config.default_vocab_size when set, else the special
// tokens plus the vocabulary.
func ParseTekkenJSON(data []byte, name string) (*TokenizerInfo, error) {
	raw, err := decodeObject(data, name)
	if err != nil {
		return nil, err
	}
	list, ok := raw["vocab"].([]any)
	if !ok {
		return nil, fmt.Errorf("%s: field vocab: want a list, got %s", name, typeName(raw["vocab"]))
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s: field vocab is empty", name)
	}
	for i, e := range list {
		obj, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: field vocab[%d]: want an object, got %s", name, i, typeName(e))
		}
		if _, err := tokenIDOf(obj["rank"]); err != nil {
			return nil, fmt.Errorf("%s: field vocab[%d].rank: %v", name, i, err)
		}
	}
	special := int64(0)
	if sp, ok := raw["special_tokens"].([]any); ok {
		special = int64(len(sp))
	}
	size := special + int64(len(list))
	if cfg, ok := raw["config"].(map[string]any); ok {
		if n, ok, err := Int(cfg, "default_num_special_tokens"); err != nil {
			return nil, fmt.Errorf("%s: config: %w", name, err)
		} else if ok && n > special {
			size = n + int64(len(list))
		}
		if n, ok, err := Int(cfg, "default_vocab_size"); err != nil {
			return nil, fmt.Errorf("%s: config: %w", name, err)
		} else if ok && n > 0 {
			size = n
		}
	}
	return &TokenizerInfo{Source: name, Model: "tekken", Size: size, Entries: len(list)}, nil
}

// TokenizerConfig is what the checks need from tokenizer_config.json.
type TokenizerConfig struct {
	Raw           map[string]any
	ChatTemplates []ChatTemplate
	BOSToken      string
	EOSToken      string
	// MaxAddedID is the largest key of added_tokens_decoder, or -1; MaxRegularAddedID the
	// largest of the entries not marked special.
	MaxAddedID, MaxRegularAddedID int64
}

// ParseTokenizerConfig parses tokenizer_config.json: chat_template (a string or a list of
// {name, template}), special tokens (strings or AddedToken objects) and added_tokens_decoder.
func ParseTokenizerConfig(data []byte, name string) (*TokenizerConfig, error) {
	raw, err := decodeObject(data, name)
	if err != nil {
		return nil, err
	}
	tc := &TokenizerConfig{Raw: raw, MaxAddedID: -1, MaxRegularAddedID: -1}
	if tc.ChatTemplates, err = parseChatTemplateField(raw["chat_template"], name, "chat_template"); err != nil {
		return nil, err
	}
	if tc.BOSToken, err = specialToken(raw, "bos_token"); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if tc.EOSToken, err = specialToken(raw, "eos_token"); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if d, ok := raw["added_tokens_decoder"]; ok && d != nil {
		obj, ok := d.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: field added_tokens_decoder: want an object of id → token, got %s", name, typeName(d))
		}
		for k, v := range obj {
			id, err := strconv.ParseInt(k, 10, 64)
			if err != nil || id < 0 || id > maxTokenID {
				return nil, fmt.Errorf("%s: field added_tokens_decoder: key %q is not a token id", name, k)
			}
			e, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: field added_tokens_decoder[%q]: want an object, got %s", name, k, typeName(v))
			}
			if _, ok := e["content"].(string); !ok {
				return nil, fmt.Errorf("%s: field added_tokens_decoder[%q].content: want a string", name, k)
			}
			tc.MaxAddedID = max(tc.MaxAddedID, id)
			if special, _ := e["special"].(bool); !special {
				tc.MaxRegularAddedID = max(tc.MaxRegularAddedID, id)
			}
		}
	}
	return tc, nil
}

// specialToken reads a special token given as a string or as an AddedToken object {"content": …}.
func specialToken(m map[string]any, key string) (string, error) {
	switch v := m[key].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case map[string]any:
		s, ok := v["content"].(string)
		if !ok {
			return "", fmt.Errorf("field %s.content: want a string", key)
		}
		return s, nil
	default:
		return "", fmt.Errorf("field %s: want a string or {\"content\": …}, got %s", key, typeName(v))
	}
}

// ParseAddedTokensJSON parses added_tokens.json (token → id) and returns the largest id, or -1.
func ParseAddedTokensJSON(data []byte, name string) (int64, error) {
	doc, err := parseJSONDoc(data)
	if err != nil {
		return 0, fmt.Errorf("%s: not a JSON object: %v", name, err)
	}
	if doc.kind() != '{' {
		return 0, fmt.Errorf("%s: not a JSON object", name)
	}
	if doc.count() == 0 {
		return -1, nil
	}
	_, maxID, err := scanVocab(doc, "added tokens")
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return maxID, nil
}

// ParseSpecialTokensMap parses special_tokens_map.json: an object of role → token (a string, an
// AddedToken object or, for additional_special_tokens, a list of them).
func ParseSpecialTokensMap(data []byte, name string) (map[string]any, error) {
	raw, err := decodeObject(data, name)
	if err != nil {
		return nil, err
	}
	for k, v := range raw {
		switch x := v.(type) {
		case nil, string:
		case map[string]any:
			if _, err := specialToken(raw, k); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		case []any:
			for i, e := range x {
				if _, err := specialToken(map[string]any{k: e}, k); err != nil {
					return nil, fmt.Errorf("%s: field %s[%d]: want a string or {\"content\": …}", name, k, i)
				}
			}
		default:
			return nil, fmt.Errorf("%s: field %s: want a token string or object, got %s", name, k, typeName(v))
		}
	}
	return raw, nil
}
