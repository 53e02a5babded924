package tokenizer

import (
	"testing"
)

// FuzzFromJSON: any tokenizer.json loads or fails with an error, and a loaded one encodes and
// decodes any text without a panic.
func FuzzFromJSON(f *testing.F) {
	f.Add(`{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}`, "abab")
	f.Add(`{"normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
	  "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
	  "model": {"type": "BPE", "byte_fallback": true, "vocab": {"▁": 0, "<0x41>": 1, "b": 2}, "merges": [["▁", "b"]]}}`, "A b")
	f.Add(`{"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\s+(?!\\S)|\\p{L}+"}, "behavior": "Isolated"}, {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
	  "added_tokens": [{"id": 3, "content": "<s>", "special": true, "lstrip": true}],
	  "model": {"type": "BPE", "ignore_merges": true, "vocab": {"a": 0, "Ġ": 1, "Ġa": 2}, "merges": ["Ġ a"]}}`, " a<s> a")
	f.Add(`{"model": {"vocab": {"\u0041\"": 0}, "merges": [`, "x")
	f.Fuzz(func(t *testing.T, doc, text string) {
		tok, err := FromJSON([]byte(doc), "tokenizer.json")
		if err != nil {
			return
		}
		ids, err := tok.Encode(text, true)
		if err != nil {
			return
		}
		_ = tok.Decode(ids, false)
		for _, id := range ids {
			if id < 0 || id >= tok.VocabSize() {
				t.Fatalf("id %d outside the vocabulary of %d", id, tok.VocabSize())
			}
		}
	})
}
