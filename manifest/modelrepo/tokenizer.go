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
func ParseTokenizerJSON(data []byte, name string) (*TokenizerInfo, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %v", name, err)
	}
	if top == nil {
		return nil, fmt.Errorf("%s: not a JSON object", name)
	}
	rawModel, ok := top["model"]
	if !ok || isJSONNull(rawModel) {
		return nil, fmt.Errorf("%s: field model missing", name)
	}
	model, err := decodeAny(rawModel)
	if err != nil {
		return nil, fmt.Errorf("%s: field model: %v", name, err)
	}
	m, ok := model.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: field model: want an object, got %s", name, typeName(model))
	}
	info := &TokenizerInfo{Source: name}
	maxID, err := parseTokenizerModel(m, info)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	maxAdded, maxRegular := int64(-1), int64(-1)
	if raw, ok := top["added_tokens"]; ok && !isJSONNull(raw) {
		if maxAdded, maxRegular, err = parseAddedTokens(raw, info); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	info.Size = max(maxID, maxAdded) + 1
	info.RegularSize = max(maxID, maxRegular) + 1
	return info, nil
}

func isJSONNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// decodeAny decodes JSON keeping numbers exact.
func decodeAny(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// modelType returns model.type, or infers it from the shape as the tokenizers library does for
// files written before the type tag existed.
func modelType(m map[string]any) (string, error) {
	if t, ok := m["type"]; ok {
		s, ok := t.(string)
		if !ok {
			return "", fmt.Errorf("field model.type: want a string, got %s", typeName(t))
		}
		for _, known := range tokenizerModelTypes {
			if s == known {
				return s, nil
			}
		}
		return "", fmt.Errorf("field model.type: %q is not one of %s", s, strings.Join(tokenizerModelTypes, ", "))
	}
	switch v := m["vocab"].(type) {
	case []any:
		return "Unigram", nil
	case map[string]any:
		if _, ok := m["merges"]; ok {
			return "BPE", nil
		}
		if _, ok := m["max_input_chars_per_word"]; ok {
			return "WordPiece", nil
		}
		return "WordLevel", nil
	default:
		return "", fmt.Errorf("field model.type missing and model.vocab is %s", typeName(v))
	}
}

// parseTokenizerModel validates the model block and returns its largest token id.
func parseTokenizerModel(m map[string]any, info *TokenizerInfo) (int64, error) {
	typ, err := modelType(m)
	if err != nil {
		return 0, err
	}
	info.Model = typ
	if typ == "Unigram" {
		return parseUnigramVocab(m, info)
	}
	vocab, maxID, err := parseVocabObject(m["vocab"], "model.vocab")
	if err != nil {
		return 0, err
	}
	info.Entries = len(vocab)
	if typ == "BPE" {
		prefix, _ := m["continuing_subword_prefix"].(string)
		merges, err := parseJSONMerges(m["merges"])
		if err != nil {
			return 0, err
		}
		if err := CheckMerges(vocab, merges, prefix, "model.merges"); err != nil {
			return 0, err
		}
	}
	return maxID, nil
}

// parseVocabObject reads a token → id object; ids must be u32.
func parseVocabObject(v any, field string) (map[string]int64, int64, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, 0, fmt.Errorf("field %s: want an object of token → id, got %s", field, typeName(v))
	}
	if len(obj) == 0 {
		return nil, 0, fmt.Errorf("field %s is empty", field)
	}
	vocab := make(map[string]int64, len(obj))
	maxID := int64(-1)
	for tok, x := range obj {
		id, err := tokenID(x)
		if err != nil {
			return nil, 0, fmt.Errorf("field %s[%q]: %v", field, tok, err)
		}
		vocab[tok] = id
		maxID = max(maxID, id)
	}
	return vocab, maxID, nil
}

// tokenID checks a JSON value is an integer id in the u32 range.
func tokenID(x any) (int64, error) {
	n, ok := x.(json.Number)
	if !ok {
		return 0, fmt.Errorf("want an integer id, got %s", typeName(x))
	}
	id, err := n.Int64()
	if err != nil || id < 0 || id > maxTokenID {
		return 0, fmt.Errorf("id %s is not an integer in 0..%d", n, int64(maxTokenID))
	}
	return id, nil
}

func parseUnigramVocab(m map[string]any, info *TokenizerInfo) (int64, error) {
	list, ok := m["vocab"].([]any)
	if !ok {
		return 0, fmt.Errorf("field model.vocab: want a list of [piece, score], got %s", typeName(m["vocab"]))
	}
	if len(list) == 0 {
		return 0, fmt.Errorf("field model.vocab is empty")
	}
	for i, e := range list {
		pair, ok := e.([]any)
		if !ok || len(pair) != 2 {
			return 0, fmt.Errorf("field model.vocab[%d]: want [piece, score]", i)
		}
		if _, ok := pair[0].(string); !ok {
			return 0, fmt.Errorf("field model.vocab[%d][0]: want a string piece, got %s", i, typeName(pair[0]))
		}
		if _, ok := pair[1].(json.Number); !ok {
			return 0, fmt.Errorf("field model.vocab[%d][1]: want a numeric score, got %s", i, typeName(pair[1]))
		}
	}
	if u, ok := m["unk_id"]; ok && u != nil {
		id, err := tokenID(u)
		if err != nil || id >= int64(len(list)) {
			return 0, fmt.Errorf("field model.unk_id: %v is not an index into the %d-entry vocab", u, len(list))
		}
	}
	info.Entries = len(list)
	return int64(len(list)) - 1, nil
}

// parseJSONMerges reads BPE merges: "a b" strings (split at the first space) or [a, b] pairs.
func parseJSONMerges(v any) ([][2]string, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("field model.merges: want a list, got %s", typeName(v))
	}
	out := make([][2]string, 0, len(list))
	for i, e := range list {
		switch x := e.(type) {
		case string:
			a, b, ok := strings.Cut(x, " ")
			if !ok {
				return nil, fmt.Errorf("field model.merges[%d]: %q is not two tokens separated by a space", i, x)
			}
			out = append(out, [2]string{a, b})
		case []any:
			if len(x) != 2 {
				return nil, fmt.Errorf("field model.merges[%d]: want a pair, got %d elements", i, len(x))
			}
			a, aok := x[0].(string)
			b, bok := x[1].(string)
			if !aok || !bok {
				return nil, fmt.Errorf("field model.merges[%d]: want a pair of strings", i)
			}
			out = append(out, [2]string{a, b})
		default:
			return nil, fmt.Errorf("field model.merges[%d]: want a string or a pair, got %s", i, typeName(e))
		}
	}
	return out, nil
}

// CheckMerges applies the tokenizers library's BPE load check: both parts of every merge and the
// merged token (the second part without the continuing-subword prefix) must be in the vocabulary.
func CheckMerges(vocab map[string]int64, merges [][2]string, prefix, field string) error {
	for i, mg := range merges {
		a, b := mg[0], mg[1]
		for _, part := range []string{a, b} {
			if _, ok := vocab[part]; !ok {
				return fmt.Errorf("field %s[%d] (%q %q): token %q is not in the vocabulary", field, i, a, b, part)
			}
		}
		rest := b
		if len(prefix) > 0 && len(b) >= len(prefix) {
			rest = b[len(prefix):]
		}
		if _, ok := vocab[a+rest]; !ok {
			return fmt.Errorf("field %s[%d] (%q %q): merged token %q is not in the vocabulary", field, i, a, b, a+rest)
		}
	}
	return nil
}

// parseAddedTokens reads tokenizer.json's added_tokens list and returns the largest id.
// parseAddedTokens returns the largest added-token id, and the largest of the non-special ones.
func parseAddedTokens(raw json.RawMessage, info *TokenizerInfo) (int64, int64, error) {
	v, err := decodeAny(raw)
	if err != nil {
		return 0, 0, fmt.Errorf("field added_tokens: %v", err)
	}
	list, ok := v.([]any)
	if !ok {
		return 0, 0, fmt.Errorf("field added_tokens: want a list, got %s", typeName(v))
	}
	maxID, maxRegular := int64(-1), int64(-1)
	for i, e := range list {
		obj, ok := e.(map[string]any)
		if !ok {
			return 0, 0, fmt.Errorf("field added_tokens[%d]: want an object, got %s", i, typeName(e))
		}
		id, err := tokenID(obj["id"])
		if err != nil {
			return 0, 0, fmt.Errorf("field added_tokens[%d].id: %v", i, err)
		}
		content, ok := obj["content"].(string)
		if !ok {
			return 0, 0, fmt.Errorf("field added_tokens[%d].content: want a string, got %s", i, typeName(obj["content"]))
		}
		maxID = max(maxID, id)
		if special, _ := obj["special"].(bool); !special {
			maxRegular = max(maxRegular, id)
		} else {
			if info.Special == nil {
				info.Special = map[int64]string{}
			}
			info.Special[id] = content
		}
	}
	return maxID, maxRegular, nil
}

// ParseVocabJSON parses a slow BPE tokenizer's vocab.json: an object of token → id.
func ParseVocabJSON(data []byte, name string) (map[string]int64, *TokenizerInfo, error) {
	raw, err := decodeAny(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: not valid JSON: %v", name, err)
	}
	vocab, maxID, err := parseVocabObject(raw, "vocab")
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
		if _, err := tokenID(obj["rank"]); err != nil {
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
	raw, err := decodeObject(data, name)
	if err != nil {
		return 0, err
	}
	if len(raw) == 0 {
		return -1, nil
	}
	_, maxID, err := parseVocabObject(raw, "added tokens")
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
