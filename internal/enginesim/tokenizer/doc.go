// Package tokenizer holds the runtime tokenizers engine-sim encodes and decodes with, the way the
// Hugging Face tokenizers library vLLM loads does: FromJSON runs a tokenizer.json pipeline (added
// tokens, normalizer, pre-tokenizer, BPE model, post-processor, decoder); NewSentencePiece reads a
// slow tokenizer.model; FromSlowBPE converts GPT-2 style vocab.json + merges.txt.
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
