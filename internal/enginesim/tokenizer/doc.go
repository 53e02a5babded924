// Package tokenizer holds the runtime tokenizers engine-sim encodes and decodes with, the way the
// Hugging Face tokenizers library vLLM loads does: FromJSON (tokenizer.json), NewSentencePiece (a
// slow tokenizer.model) and FromSlowBPE (GPT-2 style vocab.json + merges.txt).
//
// FromJSON runs a tokenizer.json pipeline: added tokens (added.go), normalizer (normalize.go),
// pre-tokenizer (pretokenize.go, pattern.go), BPE model (bpe.go), post-processor (post.go) and
// decoder (decode.go); hf.go assembles it. spm.go is SentencePiece and slowbpe.go the conversion
// of a slow BPE tokenizer.
package tokenizer

// Tokenizer is what engine-sim needs from a tokenizer.
type Tokenizer interface {
	// Encode tokenizes text; addSpecial adds the post-processor's special tokens (e.g. BOS).
	Encode(text string, addSpecial bool) ([]int, error)
	// Decode turns ids back into text; skipSpecial drops special tokens, unknown ids are dropped.
	Decode(ids []int, skipSpecial bool) string
	// TokenID is the id of a token string (an added token or a vocabulary entry).
	TokenID(tok string) (int, bool)
	// IsSpecial reports whether id is a special token.
	IsSpecial(id int) bool
	// VocabSize is the largest token id + 1; it is computed once, so calls are O(1).
	VocabSize() int
	// TokenText is the decoded text of one token.
	TokenText(id int) string
}
