package modelrepo

import (
	"strings"
	"testing"
)

func TestParseTokenizerJSON(t *testing.T) {
	bpe := `{"added_tokens": [{"id": 5, "content": "<s>"}], "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "c": 3, "abc": 4}, "merges": ["a b", ["ab", "c"]]}}`
	for _, tc := range []struct {
		name, in string
		model    string
		size     int64
		err      string
	}{
		{"bpe", bpe, "BPE", 6, ""},
		{"bpe without type", `{"model": {"vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}`, "BPE", 3, ""},
		{"bpe continuing prefix", `{"model": {"type": "BPE", "continuing_subword_prefix": "##", "vocab": {"a": 0, "##b": 1, "ab": 2}, "merges": ["a ##b"]}}`, "BPE", 3, ""},
		{"wordpiece", `{"model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "x": 7}}}`, "WordPiece", 8, ""},
		{"wordlevel", `{"model": {"type": "WordLevel", "vocab": {"x": 0}}, "added_tokens": null}`, "WordLevel", 1, ""},
		{"unigram", `{"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.5]]}}`, "Unigram", 2, ""},
		{"not json", `{"model": `, "", 0, "tokenizer.json: not valid JSON"},
		{"array", `[]`, "", 0, "not valid JSON"},
		{"no model", `{"added_tokens": []}`, "", 0, "field model missing"},
		{"model not object", `{"model": "BPE"}`, "", 0, "field model: want an object"},
		{"unknown type", `{"model": {"type": "Bigram", "vocab": {}}}`, "", 0, `field model.type: "Bigram" is not one of`},
		{"empty vocab", `{"model": {"type": "BPE", "vocab": {}, "merges": []}}`, "", 0, "field model.vocab is empty"},
		{"negative id", `{"model": {"type": "WordLevel", "vocab": {"x": -1}}}`, "", 0, `field model.vocab["x"]: id -1`},
		{"id too large", `{"model": {"type": "WordLevel", "vocab": {"x": 4294967296}}}`, "", 0, `field model.vocab["x"]`},
		{"string id", `{"model": {"type": "WordLevel", "vocab": {"x": "1"}}}`, "", 0, "want an integer id"},
		{"merge part missing", `{"model": {"type": "BPE", "vocab": {"a": 0, "ab": 1}, "merges": ["a b"]}}`, "", 0, `model.merges[0] ("a" "b"): token "b" is not in the vocabulary`},
		{"merge result missing", `{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}}`, "", 0, `merged token "ab" is not in the vocabulary`},
		{"merge without space", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}}`, "", 0, "model.merges[0]"},
		{"merge triple", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "b", "c"]]}}`, "", 0, "want a pair"},
		{"unigram bad entry", `{"model": {"type": "Unigram", "vocab": [["a"]]}}`, "", 0, "model.vocab[0]: want [piece, score]"},
		{"unigram bad unk", `{"model": {"type": "Unigram", "unk_id": 3, "vocab": [["a", 0]]}}`, "", 0, "field model.unk_id"},
		{"added token without id", `{"model": {"type": "WordLevel", "vocab": {"x": 0}}, "added_tokens": [{"content": "y"}]}`, "", 0, "added_tokens[0].id"},
		{"added token without content", `{"model": {"type": "WordLevel", "vocab": {"x": 0}}, "added_tokens": [{"id": 1}]}`, "", 0, "added_tokens[0].content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := ParseTokenizerJSON([]byte(tc.in), "tokenizer.json")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "tokenizer.json: ") {
					t.Fatalf("error %v, want one naming the file and containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.Model != tc.model || info.Size != tc.size {
				t.Errorf("got %s size %d, want %s size %d", info.Model, info.Size, tc.model, tc.size)
			}
		})
	}
}

func TestSlowTokenizerFiles(t *testing.T) {
	vocab, info, err := ParseVocabJSON([]byte(`{"a": 0, "b": 1, "ab": 2}`), "vocab.json")
	if err != nil || info.Size != 3 {
		t.Fatalf("vocab.json: %v %+v", err, info)
	}
	merges, err := ParseMergesTXT([]byte("#version: 0.2\na b\n"), "merges.txt")
	if err != nil || len(merges) != 1 {
		t.Fatalf("merges.txt: %v %v", err, merges)
	}
	if err := CheckMerges(vocab, merges, "", "merges"); err != nil {
		t.Errorf("consistent merges rejected: %v", err)
	}
	if err := CheckMerges(vocab, [][2]string{{"b", "a"}}, "", "merges"); err == nil || !strings.Contains(err.Error(), `"ba"`) {
		t.Errorf("inconsistent merge accepted or badly reported: %v", err)
	}
	for _, tc := range []struct {
		name string
		fn   func() error
		want string
	}{
		{"vocab.json list", func() error { _, _, err := ParseVocabJSON([]byte(`["a"]`), "vocab.json"); return err }, "vocab.json: field vocab: want an object"},
		{"vocab.json float id", func() error { _, _, err := ParseVocabJSON([]byte(`{"a": 1.5}`), "vocab.json"); return err }, `vocab.json: field vocab["a"]`},
		{"merges.txt three parts", func() error { _, err := ParseMergesTXT([]byte("a b c\n"), "merges.txt"); return err }, "merges.txt: line 1"},
		{"merges.txt empty", func() error { _, err := ParseMergesTXT([]byte("#version: 0.2\n"), "merges.txt"); return err }, "merges.txt: no merges"},
		{"merges.txt binary", func() error { _, err := ParseMergesTXT([]byte{0xff, 0xfe}, "merges.txt"); return err }, "not UTF-8"},
		{"vocab.txt empty", func() error { _, err := ParseVocabTXT(nil, "vocab.txt"); return err }, "vocab.txt: no tokens"},
		{"tiktoken bad base64", func() error { _, err := ParseTiktoken([]byte("!!! 0\n"), "x.tiktoken"); return err }, "x.tiktoken: line 1: token is not base64"},
		{"tiktoken bad rank", func() error { _, err := ParseTiktoken([]byte("YQ== x\n"), "x.tiktoken"); return err }, "rank"},
		{"tekken no vocab", func() error { _, err := ParseTekkenJSON([]byte(`{"config": {}}`), "tekken.json"); return err }, "tekken.json: field vocab"},
		{"tekken bad rank", func() error {
			_, err := ParseTekkenJSON([]byte(`{"vocab": [{"rank": "a"}]}`), "tekken.json")
			return err
		}, "vocab[0].rank"},
		{"added_tokens.json", func() error { _, err := ParseAddedTokensJSON([]byte(`{"<x>": "1"}`), "added_tokens.json"); return err }, "added_tokens.json"},
		{"special_tokens_map.json", func() error {
			_, err := ParseSpecialTokensMap([]byte(`{"bos_token": 1}`), "special_tokens_map.json")
			return err
		}, "field bos_token"},
	} {
		if err := tc.fn(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if info, err := ParseTiktoken([]byte("YQ== 0\nYg== 1\n\n"), "x.tiktoken"); err != nil || info.Size != 2 {
		t.Errorf("tiktoken: %v %+v", err, info)
	}
	if info, err := ParseTekkenJSON([]byte(`{"config": {"default_vocab_size": 131072, "default_num_special_tokens": 1000}, "vocab": [{"rank": 0, "token_bytes": "YQ=="}], "special_tokens": []}`), "tekken.json"); err != nil || info.Size != 131072 {
		t.Errorf("tekken: %v %+v", err, info)
	}
	if info, err := ParseVocabTXT([]byte("[PAD]\n[UNK]\nx\n"), "vocab.txt"); err != nil || info.Size != 3 {
		t.Errorf("vocab.txt: %v %+v", err, info)
	}
	if n, err := ParseAddedTokensJSON([]byte(`{"<x>": 7}`), "added_tokens.json"); err != nil || n != 7 {
		t.Errorf("added_tokens.json: %v %d", err, n)
	}
}

// spModel builds a SentencePiece ModelProto with the given pieces and a trainer_spec.
func spModel(pieces ...string) []byte {
	var out []byte
	for _, p := range pieces {
		msg := append([]byte{0x0a, byte(len(p))}, p...)
		msg = append(msg, 0x15, 0, 0, 0x80, 0xbf) // score -1.0
		msg = append(msg, 0x18, 0x01)             // type NORMAL
		out = append(out, 0x0a, byte(len(msg)))
		out = append(out, msg...)
	}
	return append(out, 0x12, 0x02, 0x08, 0x01) // trainer_spec {model_type: 1}
}

func TestParseSentencePieceModel(t *testing.T) {
	info, err := ParseSentencePieceModel(spModel("<unk>", "<s>", "▁a"), "tokenizer.model")
	if err != nil || info.Size != 3 {
		t.Fatalf("valid model: %v %+v", err, info)
	}
	good := spModel("<unk>")
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "empty file"},
		{"json", []byte(`{"model": 1}`), "not a SentencePiece model"},
		{"no pieces", []byte{0x12, 0x00}, "no pieces"},
		{"truncated", good[:len(good)-6], "runs past the end"},
		{"bad varint", []byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "malformed varint"},
		{"huge length", []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, "runs past the end"},
		{"group wire type", []byte{0x0b}, "wire type 3"},
		{"field zero", []byte{0x02, 0x00}, "invalid field number 0"},
		{"pieces as varint", []byte{0x08, 0x01}, "field pieces has wire type 0"},
		{"piece without string", []byte{0x0a, 0x02, 0x18, 0x01}, "no piece string"},
		{"piece score wrong type", []byte{0x0a, 0x05, 0x0a, 0x01, 'a', 0x10, 0x01}, "field 2 has wire type 0"},
	} {
		_, err := ParseSentencePieceModel(tc.in, "tokenizer.model")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "tokenizer.model: ") {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestParseTokenizerConfig(t *testing.T) {
	tc, err := ParseTokenizerConfig([]byte(`{"bos_token": {"content": "<s>", "__type": "AddedToken"}, "eos_token": "</s>",
		"added_tokens_decoder": {"0": {"content": "<unk>"}, "32000": {"content": "<pad>"}},
		"chat_template": [{"name": "default", "template": "{{ x }}"}, {"name": "tool_use", "template": "{{ y }}"}]}`), "tokenizer_config.json")
	if err != nil {
		t.Fatal(err)
	}
	if tc.BOSToken != "<s>" || tc.EOSToken != "</s>" || tc.MaxAddedID != 32000 || len(tc.ChatTemplates) != 2 || tc.ChatTemplates[1].Name != "tool_use" {
		t.Errorf("parsed %+v", tc)
	}
	for _, c := range []struct{ in, want string }{
		{`{"chat_template": 5}`, "field chat_template"},
		{`{"bos_token": 5}`, "field bos_token"},
		{`{"added_tokens_decoder": {"x": {"content": "a"}}}`, `key "x" is not a token id`},
		{`{"added_tokens_decoder": {"1": "a"}}`, `added_tokens_decoder["1"]`},
		{`{"a": 1}{}`, "trailing data"},
	} {
		if _, err := ParseTokenizerConfig([]byte(c.in), "tokenizer_config.json"); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "tokenizer_config.json: ") {
			t.Errorf("%s: error %v, want %q", c.in, err, c.want)
		}
	}
}

// EachMerge and EachVocabEntry, the readers engine-sim shares with lint: both merge forms, escapes,
// and malformed input refused by name.
func TestEachMergeAndVocabEntry(t *testing.T) {
	var got []string
	err := EachMerge([]byte(`["a b", ["c", "d e"], "\u0066 g"]`), func(i int, a, b []byte) error {
		got = append(got, string(a)+"|"+string(b))
		return nil
	})
	if err != nil || strings.Join(got, ",") != "a|b,c|d e,f|g" {
		t.Fatalf("merges %q, %v", got, err)
	}
	for in, want := range map[string]string{`["ab"]`: "merges[0]", `[["a"]]`: "want a pair", `[1]`: "want a string or a pair", `{}`: "want a list", `[`: "not valid JSON"} {
		if err := EachMerge([]byte(in), func(int, []byte, []byte) error { return nil }); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	ids := map[string]int64{}
	if err := EachVocabEntry([]byte(`{"a": 0, "\u00e9": 4294967295}`), func(tok []byte, id int64) error { ids[string(tok)] = id; return nil }); err != nil || len(ids) != 2 || ids["é"] != 4294967295 {
		t.Fatalf("vocab %v, %v", ids, err)
	}
	for in, want := range map[string]string{`{"a": -1}`: `vocab["a"]: id -1`, `{"a": 1.5}`: "not an integer", `{"a": "1"}`: "want an integer id", `[]`: "want an object", "{\"\xff\": 1}": "UTF-8"} {
		if err := EachVocabEntry([]byte(in), func([]byte, int64) error { return nil }); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
