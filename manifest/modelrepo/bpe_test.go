package modelrepo

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lifeboat/internal/sample"
)

func sampleBPE(t *testing.T) *BPETokenizer {
	t.Helper()
	l, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{NoLoRA: true, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(l.ModelDir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ParseBPETokenizer(data, "tokenizer.json")
	if err != nil {
		t.Fatalf("ParseBPETokenizer: %v", err)
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
func TestBPELookaheadSplit(t *testing.T) {
	tok := sampleBPE(t)
	if len(tok.splits) == 0 {
		t.Fatal("no Split pre-tokenizer")
	}
	got, err := splitIsolated(tok.splits[0], "a   b")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "  ", " b"}; !slices.Equal(got, want) {
		t.Errorf("split = %q, want %q", got, want)
	}
}

func TestBPERejects(t *testing.T) {
	for name, doc := range map[string]string{
		"wordpiece":   `{"model": {"type": "WordPiece", "vocab": {"a": 0}}}`,
		"no bytelvl":  `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`,
		"metaspace":   `{"pre_tokenizer": {"type": "Metaspace"}, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`,
		"bad regex":   `{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "("}, "behavior": "Isolated"}, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`,
		"not json":    `{`,
		"short vocab": `{"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`,
	} {
		if _, err := ParseBPETokenizer([]byte(doc), "tokenizer.json"); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
			t.Errorf("%s: err = %v, want an error naming the file", name, err)
		}
	}
}
