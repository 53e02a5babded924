package sample

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"sync"
)

// llama3Pattern is the Split pre-tokenizer regex of Llama 3's tokenizer.json. Its `\s+(?!\S)`
// lookahead is not supported by Go's regexp; trainPattern is the same without that alternative,
// which only differs on runs of several spaces (the corpus has none).
const (
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	trainPattern  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+`
)

// Special tokens, in id order after the regular vocabulary (Llama 3 names).
const (
	BOSToken         = "<|begin_of_text|>"
	EndOfTextToken   = "<|end_of_text|>"
	StartHeaderToken = "<|start_header_id|>"
	EndHeaderToken   = "<|end_header_id|>"
	EOMToken         = "<|eom_id|>"
	EOTToken         = "<|eot_id|>"
)

var specialTokens = []string{BOSToken, EndOfTextToken, StartHeaderToken, EndHeaderToken, EOMToken, EOTToken}

// regularVocabTarget is how many regular (non-special) tokens the demo tokenizer learns: the 256
// byte symbols plus merged tokens.
const regularVocabTarget = 448

// bpeTokenizer is the learned byte-level BPE model.
type bpeTokenizer struct {
	vocab  []string    // id -> token; 0..255 are the byte symbols in GPT-2 order
	merges [][2]string // by rank
}

func (t *bpeTokenizer) specialID(tok string) int {
	for i, s := range specialTokens {
		if s == tok {
			return len(t.vocab) + i
		}
	}
	panic("sample: unknown special token " + tok)
}

// eosIDs are the ids generation stops on, like Llama 3.1: end_of_text, eom_id, eot_id.
func (t *bpeTokenizer) eosIDs() []int {
	return []int{t.specialID(EndOfTextToken), t.specialID(EOMToken), t.specialID(EOTToken)}
}

var (
	tokOnce sync.Once
	tokVal  *bpeTokenizer
)

// demoTokenizer learns the tokenizer once per process; it depends only on the embedded corpus.
func demoTokenizer() *bpeTokenizer {
	tokOnce.Do(func() { tokVal = trainBPE(corpus, regularVocabTarget) })
	return tokVal
}

// TokenizerSize is the number of tokens (regular and special) in the generated tokenizer; the
// config's VocabSize must be at least this.
func TokenizerSize() int {
	return len(demoTokenizer().vocab) + len(specialTokens)
}

// byteSymbols returns GPT-2's bytes_to_unicode table in vocabulary order: the printable bytes map
// to themselves, the rest to U+0100 upwards. order[i] is the byte whose symbol gets id i.
func byteSymbols() (order []byte, sym [256]string) {
	var printable [256]bool
	for b := '!'; b <= '~'; b++ {
		printable[b] = true
	}
	for b := 0xA1; b <= 0xAC; b++ {
		printable[b] = true
	}
	for b := 0xAE; b <= 0xFF; b++ {
		printable[b] = true
	}
	for b := 0; b < 256; b++ {
		if printable[b] {
			order = append(order, byte(b))
			sym[b] = string(rune(b))
		}
	}
	n := 0
	for b := 0; b < 256; b++ {
		if !printable[b] {
			order = append(order, byte(b))
			sym[b] = string(rune(256 + n))
			n++
		}
	}
	return order, sym
}

// trainBPE learns byte-level BPE merges from text until the vocabulary holds target tokens or no
// pair occurs twice. Ties are broken by the pair's strings, so the result is fully deterministic.
func trainBPE(text string, target int) *bpeTokenizer {
	order, sym := byteSymbols()
	t := &bpeTokenizer{}
	known := map[string]bool{}
	for _, b := range order {
		t.vocab = append(t.vocab, sym[b])
		known[sym[b]] = true
	}

	counts := map[string]int{}
	for _, w := range regexp.MustCompile(trainPattern).FindAllString(text, -1) {
		counts[w]++
	}
	type word struct {
		syms []string
		n    int
	}
	keys := slices.Sorted(maps.Keys(counts))
	words := make([]word, 0, len(keys))
	for _, k := range keys {
		w := word{n: counts[k]}
		for i := 0; i < len(k); i++ {
			w.syms = append(w.syms, sym[k[i]])
		}
		words = append(words, w)
	}

	for len(t.vocab) < target {
		pairs := map[[2]string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.syms); i++ {
				pairs[[2]string{w.syms[i], w.syms[i+1]}] += w.n
			}
		}
		var best [2]string
		bestN := 1
		for p, n := range pairs {
			if n > bestN || (n == bestN && n > 1 && (p[0] < best[0] || (p[0] == best[0] && p[1] < best[1]))) {
				best, bestN = p, n
			}
		}
		if bestN < 2 {
			break
		}
		merged := best[0] + best[1]
		t.merges = append(t.merges, best)
		if !known[merged] {
			known[merged] = true
			t.vocab = append(t.vocab, merged)
		}
		for wi := range words {
			s := words[wi].syms
			out := s[:0]
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && s[i] == best[0] && s[i+1] == best[1] {
					out = append(out, merged)
					i++
					continue
				}
				out = append(out, s[i])
			}
			words[wi].syms = out
		}
	}
	return t
}

// tokenizerJSON is tokenizer.json in the layout the Hugging Face tokenizers library writes (keys in
// its struct order, vocab in id order, merges as pairs).
func (t *bpeTokenizer) tokenizerJSON() object {
	bos := t.specialID(BOSToken)
	var added []any
	for _, s := range specialTokens {
		added = append(added, object{
			{"id", t.specialID(s)},
			{"content", s},
			{"single_word", false},
			{"lstrip", false},
			{"rstrip", false},
			{"normalized", false},
			{"special", true},
		})
	}
	vocab := make(object, 0, len(t.vocab))
	for id, tok := range t.vocab {
		vocab = append(vocab, member{tok, id})
	}
	merges := make([]any, 0, len(t.merges))
	for _, m := range t.merges {
		merges = append(merges, []string{m[0], m[1]})
	}
	special := func(typeID int) object {
		return object{{"SpecialToken", object{{"id", BOSToken}, {"type_id", typeID}}}}
	}
	seq := func(id string, typeID int) object {
		return object{{"Sequence", object{{"id", id}, {"type_id", typeID}}}}
	}
	return object{
		{"version", "1.0"},
		{"truncation", nil},
		{"padding", nil},
		{"added_tokens", added},
		{"normalizer", nil},
		{"pre_tokenizer", object{
			{"type", "Sequence"},
			{"pretokenizers", []any{
				object{
					{"type", "Split"},
					{"pattern", object{{"Regex", llama3Pattern}}},
					{"behavior", "Isolated"},
					{"invert", false},
				},
				object{
					{"type", "ByteLevel"},
					{"add_prefix_space", false},
					{"trim_offsets", true},
					{"use_regex", false},
				},
			}},
		}},
		{"post_processor", object{
			{"type", "Sequence"},
			{"processors", []any{
				object{
					{"type", "ByteLevel"},
					{"add_prefix_space", true},
					{"trim_offsets", false},
					{"use_regex", true},
				},
				object{
					{"type", "TemplateProcessing"},
					{"single", []any{special(0), seq("A", 0)}},
					{"pair", []any{special(0), seq("A", 0), special(1), seq("B", 1)}},
					{"special_tokens", object{
						{BOSToken, object{{"id", BOSToken}, {"ids", []int{bos}}, {"tokens", []string{BOSToken}}}},
					}},
				},
			}},
		}},
		{"decoder", object{
			{"type", "ByteLevel"},
			{"add_prefix_space", true},
			{"trim_offsets", true},
			{"use_regex", true},
		}},
		{"model", object{
			{"type", "BPE"},
			{"dropout", nil},
			{"unk_token", nil},
			{"continuing_subword_prefix", nil},
			{"end_of_word_suffix", nil},
			{"fuse_unk", false},
			{"byte_fallback", false},
			{"ignore_merges", true},
			{"vocab", vocab},
			{"merges", merges},
		}},
	}
}

// chatTemplate is Meta's Llama 3 Instruct chat template.
const chatTemplate = "{% set loop_messages = messages %}{% for message in loop_messages %}" +
	"{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}" +
	"{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}" +
	"{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"

func tokenEntry(content string) map[string]any {
	return map[string]any{"content": content, "lstrip": false, "normalized": false, "rstrip": false, "single_word": false}
}

func (t *bpeTokenizer) tokenizerConfig() map[string]any {
	dec := map[string]any{}
	for _, s := range specialTokens {
		e := tokenEntry(s)
		e["special"] = true
		dec[strconv.Itoa(t.specialID(s))] = e
	}
	return map[string]any{
		"added_tokens_decoder":         dec,
		"bos_token":                    BOSToken,
		"chat_template":                chatTemplate,
		"clean_up_tokenization_spaces": true,
		"eos_token":                    EOTToken,
		"model_input_names":            []string{"input_ids", "attention_mask"},
		"model_max_length":             maxPositionEmbeddings,
		"tokenizer_class":              "PreTrainedTokenizerFast",
	}
}

func specialTokensMap() map[string]any {
	return map[string]any{"bos_token": tokenEntry(BOSToken), "eos_token": tokenEntry(EOTToken)}
}
