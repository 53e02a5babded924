package modelrepo

import (
	"strings"
	"testing"
)

// FuzzTokenizerJSON checks the tokenizer.json parser never panics, names the file in errors, and
// reports a positive vocabulary size when it accepts.
func FuzzTokenizerJSON(f *testing.F) {
	addFileSeed(f, "testdata/seeds/tokenizer.json") // a real file written by the sample generator
	for _, s := range []string{
		`{"added_tokens": [{"id": 5, "content": "<s>"}], "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "c": 3, "abc": 4}, "merges": ["a b", ["ab", "c"]]}}`,
		`{"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.5]]}}`,
		`{"model": {"type": "WordPiece", "continuing_subword_prefix": "##", "vocab": {"[UNK]": 0}}}`,
		`{"model": {"vocab": {"x": 4294967295}}}`,
		`{"model": {"type": "BPE", "continuing_subword_prefix": "##########", "vocab": {"a": 0, "#": 1}, "merges": ["a #"]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := ParseTokenizerJSON(data, "tokenizer.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "tokenizer.json: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if info.Size <= 0 || info.Entries <= 0 {
			t.Fatalf("accepted with size %d, %d entries", info.Size, info.Entries)
		}
	})
}

// FuzzSentencePieceModel checks the protobuf wire walker on arbitrary bytes.
func FuzzSentencePieceModel(f *testing.F) {
	f.Add(spModel("<unk>", "<s>", "▁a"))
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := ParseSentencePieceModel(data, "tokenizer.model")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "tokenizer.model: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if info.Size < 1 {
			t.Fatalf("accepted without pieces")
		}
	})
}
