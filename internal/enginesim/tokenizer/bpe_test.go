package tokenizer

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lifeboat/internal/sample"
)

func sampleBPE(t *testing.T) *HF {
	t.Helper()
	l, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{NoLoRA: true, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(l.ModelDir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := FromJSON(data, "tokenizer.json")
	if err != nil {
		t.Fatalf("FromJSON: %v", err)
	}
	return tok
}

func TestBPERoundTrip(t *testing.T) {
	tok := sampleBPE(t)
	for _, s := range []string{
		"",
		"A lifeboat is not built for the calm day.",
		"multiple   spaces\tand\n\nnewlines  \n",
		"naïve café — 東京 🚤 1234567",
		"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
		"it's what we'll do, they've said",
	} {
		ids, err := tok.Encode(s, false)
		if err != nil {
			t.Fatalf("Encode(%q): %v", s, err)
		}
		if got := tok.Decode(ids, false); got != s {
			t.Errorf("Decode(Encode(%q)) = %q (ids %v)", s, got, ids)
		}
	}
}

func TestBPESpecialTokensAndBOS(t *testing.T) {
	tok := sampleBPE(t)
	bos, ok := tok.TokenID(sample.BOSToken)
	if !ok {
		t.Fatal("BOS not found")
	}
	eot, _ := tok.TokenID(sample.EOTToken)
	ids, err := tok.Encode("hello"+sample.EOTToken, true)
	if err != nil {
		t.Fatal(err)
	}
	if ids[0] != bos || ids[len(ids)-1] != eot {
		t.Errorf("ids %v: want BOS %d first and EOT %d last", ids, bos, eot)
	}
	if !tok.IsSpecial(eot) {
		t.Error("EOT not special")
	}
	if got := tok.Decode(ids, true); got != "hello" {
		t.Errorf("Decode skipping specials = %q", got)
	}
}

func TestBPEMergesApplied(t *testing.T) {
	tok := sampleBPE(t)
	// "the" is frequent in the sample corpus: " the" must be fewer tokens than its bytes.
	ids, err := tok.Encode(" the the the", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) >= len(" the the the") {
		t.Errorf("no merges applied: %v", ids)
	}
	if ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("same word encoded differently: %v", ids)
	}
}

// The Llama 3 pattern's `\s+(?!\S)` keeps the last space of a run with the following word.
func TestLookaheadSplit(t *testing.T) {
	p, err := parsePattern(map[string]string{"Regex": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := p.findAll("a   b")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := splitBy(nil, "a   b", ms, behIsolated, false), []string{"a", "  ", " b"}; !slices.Equal(got, want) {
		t.Errorf("split = %q, want %q", got, want)
	}
}

// TestSplitBehaviors checks each SplitDelimiterBehavior on the tokenizers library's own example.
func TestSplitBehaviors(t *testing.T) {
	p := &pattern{literal: "-"}
	s := "the-final--countdown"
	ms, _ := p.findAll(s)
	for _, c := range []struct {
		behavior int
		invert   bool
		want     []string
	}{
		{behRemoved, false, []string{"the", "final", "countdown"}},
		{behIsolated, false, []string{"the", "-", "final", "-", "-", "countdown"}},
		{behMergedWithPrevious, false, []string{"the-", "final-", "-", "countdown"}},
		{behMergedWithNext, false, []string{"the", "-final", "-", "-countdown"}},
		{behContiguous, false, []string{"the", "-", "final", "--", "countdown"}},
		{behRemoved, true, []string{"-", "-", "-"}},
	} {
		if got := splitBy(nil, s, ms, c.behavior, c.invert); !slices.Equal(got, c.want) {
			t.Errorf("behavior %d invert %v: %q, want %q", c.behavior, c.invert, got, c.want)
		}
	}
}

// TestMetaspaceRoundTrip: a SentencePiece-style tokenizer.json (Metaspace pre-tokenizer and
// decoder, byte fallback) encodes "▁"-prefixed words and decodes back to the text.
func TestMetaspaceRoundTrip(t *testing.T) {
	doc := `{"added_tokens": [{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true}],
	"pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true},
	"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}], "special_tokens": {"<s>": {"ids": [1]}}},
	"decoder": {"type": "Sequence", "decoders": [{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"}, {"type": "ByteFallback"}, {"type": "Fuse"}]},
	"model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true,
	  "vocab": {"<unk>": 0, "<s>": 1, "<0xC3>": 2, "<0xA9>": 3, "▁": 4, "h": 5, "i": 6, "▁h": 7, "▁hi": 8},
	  "merges": [["▁", "h"], ["▁h", "i"]]}}`
	tok, err := FromJSON([]byte(doc), "tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode("hi hié", true)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 8, 8, 2, 3}; !slices.Equal(ids, want) {
		t.Errorf("Encode = %v, want %v", ids, want)
	}
	if got := tok.Decode(ids, true); got != "hi hié" {
		t.Errorf("Decode = %q", got)
	}
	if ids, _ := tok.Encode("hxxi", false); !slices.Equal(ids, []int{7, 0, 6}) {
		t.Errorf("unknown characters fused: %v, want [7 0 6]", ids)
	}
}

func TestFromJSONRejects(t *testing.T) {
	model := `"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []}`
	for name, doc := range map[string]string{
		"wordpiece":      `{"model": {"type": "WordPiece", "vocab": {"a": 0}}}`,
		"empty vocab":    `{"model": {"type": "BPE", "vocab": {}, "merges": []}}`,
		"bad merge":      `{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}}`,
		"merge part":     `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "z"]]}}`,
		"negative id":    `{"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}}`,
		"bad regex":      `{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "("}, "behavior": "Isolated"}, ` + model + `}`,
		"bad behavior":   `{"pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways"}, ` + model + `}`,
		"bert normalize": `{"normalizer": {"type": "BertNormalizer"}, ` + model + `}`,
		"ctc decoder":    `{"decoder": {"type": "CTC"}, ` + model + `}`,
		"unk not vocab":  `{"model": {"type": "BPE", "unk_token": "<unk>", "vocab": {"a": 0}, "merges": []}}`,
		"post id":        `{"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "x"}}], "special_tokens": {"x": {"ids": [99]}}}, ` + model + `}`,
		"deep":           `{"normalizer": ` + strings.Repeat(`{"type": "Sequence", "normalizers": [`, 40) + strings.Repeat(`]}`, 40) + `, ` + model + `}`,
		"not json":       `{`,
	} {
		if _, err := FromJSON([]byte(doc), "tokenizer.json"); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
			t.Errorf("%s: err = %v, want an error naming the file", name, err)
		}
	}
}
