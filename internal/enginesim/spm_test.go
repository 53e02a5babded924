package enginesim

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"lifeboat/internal/enginesim/tokenizer"
	"lifeboat/internal/sample"
	"lifeboat/manifest/modelrepo"
)

type spmPiece struct {
	piece string
	score float32
	typ   int
}

// spmModel encodes a SentencePiece ModelProto: field 1 = repeated SentencePiece {1: piece,
// 2: score float32, 3: type enum}, then a trainer_spec the parser must skip.
func spmModel(pieces []spmPiece) []byte {
	field := func(num int, b []byte) []byte {
		out := binary.AppendUvarint(nil, uint64(num<<3|2))
		out = binary.AppendUvarint(out, uint64(len(b)))
		return append(out, b...)
	}
	var out []byte
	for _, p := range pieces {
		msg := field(1, []byte(p.piece))
		msg = append(msg, 0x15)
		msg = binary.LittleEndian.AppendUint32(msg, math.Float32bits(p.score))
		msg = append(msg, 0x18)
		msg = binary.AppendUvarint(msg, uint64(p.typ))
		out = append(out, field(1, msg)...)
	}
	return append(out, 0x12, 0x02, 0x08, 0x01)
}

// sampleSPM derives a SentencePiece model from the sample repository's tokenizer.json: <unk>,
// <s>, </s>, the sample's special tokens as control pieces, the 256 byte pieces, then every regular
// token that decodes to valid UTF-8 with spaces as "▁", scored by rank.
func sampleSPM(t *testing.T, l *sample.Layout) []byte {
	t.Helper()
	data, err := os.ReadFile(l.Path("model/tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	bpe, err := tokenizer.FromJSON(data, "tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	pieces := []spmPiece{{"<unk>", 0, modelrepo.SPMUnknown}, {"<s>", 0, modelrepo.SPMControl}, {"</s>", 0, modelrepo.SPMControl}}
	for id := 0; id < bpe.VocabSize(); id++ {
		if bpe.IsSpecial(id) {
			pieces = append(pieces, spmPiece{bpe.TokenText(id), 0, modelrepo.SPMControl})
		}
	}
	for b := 0; b < 256; b++ {
		pieces = append(pieces, spmPiece{"<0x" + strings.ToUpper(hex2(b)) + ">", 0, modelrepo.SPMByte})
	}
	seen := map[string]bool{}
	for id := 0; id < bpe.VocabSize(); id++ {
		s := bpe.TokenText(id)
		if bpe.IsSpecial(id) || s == "" || !utf8.ValidString(s) || seen[s] {
			continue
		}
		seen[s] = true
		pieces = append(pieces, spmPiece{strings.ReplaceAll(s, " ", "▁"), -float32(id), modelrepo.SPMNormal})
	}
	return spmModel(pieces)
}

func hex2(b int) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}

func TestSPMTokenizerBasics(t *testing.T) {
	tok, err := tokenizer.NewSentencePiece(spmModel([]spmPiece{
		{"<unk>", 0, modelrepo.SPMUnknown}, {"<s>", 0, modelrepo.SPMControl}, {"</s>", 0, modelrepo.SPMControl},
		{"<0xC3>", 0, modelrepo.SPMByte}, {"<0xA9>", 0, modelrepo.SPMByte},
		{"▁", -1, modelrepo.SPMNormal}, {"h", -1, modelrepo.SPMNormal}, {"e", -1, modelrepo.SPMNormal},
		{"l", -1, modelrepo.SPMNormal}, {"o", -1, modelrepo.SPMNormal}, {"he", -2, modelrepo.SPMNormal},
		{"hell", -3, modelrepo.SPMNormal}, {"llo", -1.5, modelrepo.SPMNormal}, {"▁he", -2, modelrepo.SPMNormal},
	}), "tokenizer.model")
	if err != nil {
		t.Fatal(err)
	}
	if tok.BOS() != "<s>" || tok.EOS() != "</s>" || tok.VocabSize() != 14 {
		t.Errorf("bos %q eos %q size %d", tok.BOS(), tok.EOS(), tok.VocabSize())
	}
	if !tok.IsSpecial(0) || !tok.IsSpecial(1) || tok.IsSpecial(5) || tok.IsSpecial(99) {
		t.Error("IsSpecial")
	}
	// Viterbi: "hello" = "he"+"llo" (-3.5) beats "hell"+"o" (-4), " hello" = "▁he"+"llo"; "é" has no piece: bytes; "z" has
	// neither a piece nor a byte piece: <unk>.
	ids, _ := tok.Encode("hello hello é</s>z", true)
	want := []int{1, 10, 12, 13, 12, 5, 3, 4, 2, 0} // <s> he llo ▁he llo ▁ <0xC3> <0xA9> </s> <unk>
	if !equalInts(ids, want) {
		t.Errorf("Encode = %v, want %v", ids, want)
	}
	if got := tok.Decode(ids, false); got != "<s>hello hello é</s><unk>" {
		t.Errorf("Decode = %q", got)
	}
	if got := tok.Decode(ids, true); got != "hello hello é" {
		t.Errorf("Decode(skip) = %q", got)
	}
	if id, ok := tok.TokenID("▁he"); !ok || id != 13 {
		t.Errorf("TokenID = %d %v", id, ok)
	}
	again, _ := tok.Encode("hello hello é</s>z", true)
	if !equalInts(ids, again) {
		t.Error("not deterministic")
	}
	if _, err := tokenizer.NewSentencePiece([]byte("not a model"), "tokenizer.model"); err == nil {
		t.Error("garbage parsed")
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// serveBoth loads the repository and checks a completion and a chat are served.
func serveBoth(t *testing.T, l *sample.Layout) *Model {
	t.Helper()
	s, hs := newTestServer(t, l, ServerOptions{})
	for _, c := range []struct{ path, body, field string }{
		{"/v1/completions", `{"model": "llama-demo", "prompt": "The lifeboat is ready.", "max_tokens": 5}`, "text"},
		{"/v1/chat/completions", strings.Replace(chatBody, `"stream": true`, `"stream": false`, 1), "message"},
	} {
		resp := post(t, hs.URL+c.path, c.body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", c.path, resp.StatusCode, b)
		}
		var out struct {
			Choices []map[string]any `json:"choices"`
			Usage   struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) != 1 || out.Choices[0][c.field] == nil {
			t.Fatalf("%s: %v %s", c.path, err, b)
		}
		if out.Usage.Completion != 5 || out.Usage.Prompt < 3 {
			t.Errorf("%s: usage %+v", c.path, out.Usage)
		}
	}
	return s.m
}

func roundTrip(t *testing.T, tok tokenizer.Tokenizer) {
	t.Helper()
	for _, s := range []string{"Hello, lifeboat!", "  two  spaces\tand\nnewline", "ünïcödé ✓ 🚣", "The weights and the tokenizer."} {
		ids, err := tok.Encode(s, false)
		if err != nil || len(ids) == 0 {
			t.Fatalf("Encode(%q): %v %v", s, ids, err)
		}
		if got := tok.Decode(ids, true); got != s {
			t.Errorf("round trip %q -> %v -> %q", s, ids, got)
		}
		var parts string
		for _, id := range ids {
			parts += tok.Decode([]int{id}, true)
		}
		if parts != s && utf8.ValidString(parts) {
			t.Errorf("token-by-token decode %q != %q", parts, s)
		}
	}
}

func TestLoadSentencePieceRepo(t *testing.T) {
	l := genRepo(t, sample.Options{})
	if err := os.WriteFile(l.Path("model/tokenizer.model"), sampleSPM(t, l), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(l.Path("model/tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	m := serveBoth(t, l)
	spm, ok := m.Tokenizer.(*tokenizer.SentencePiece)
	if !ok {
		t.Fatalf("tokenizer is %T", m.Tokenizer)
	}
	if m.BOSToken != "<|begin_of_text|>" || m.EOSToken != "<|eot_id|>" || len(m.StopIDs) != 1 {
		t.Errorf("bos %q eos %q stop %v", m.BOSToken, m.EOSToken, m.StopIDs)
	}
	roundTrip(t, spm)
	// Special pieces in the text are split out whole.
	ids, _ := spm.Encode("<|begin_of_text|>hi", false)
	if id, _ := spm.TokenID("<|begin_of_text|>"); len(ids) == 0 || ids[0] != id {
		t.Errorf("ids %v", ids)
	}
	// Add-special puts <s> first.
	if ids, _ := spm.Encode("hi", true); ids[0] != 1 {
		t.Errorf("add special: %v", ids)
	}

	// Without tokenizer_config.json, BOS/EOS are <s> / </s>.
	os.Remove(l.Path("model/tokenizer_config.json"))
	m, err := Load(context.Background(), l.ModelDir, l.EngineFile, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.BOSToken != "<s>" || m.EOSToken != "</s>" || !m.StopIDs[2] {
		t.Errorf("bos %q eos %q stop %v", m.BOSToken, m.EOSToken, m.StopIDs)
	}
}

// writeSlowBPE replaces tokenizer.json with vocab.json + merges.txt holding its model.
func writeSlowBPE(t *testing.T, l *sample.Layout) {
	t.Helper()
	data, err := os.ReadFile(l.Path("model/tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Model struct {
			Vocab  map[string]int `json:"vocab"`
			Merges [][2]string    `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	v, _ := json.Marshal(doc.Model.Vocab)
	var merges strings.Builder
	merges.WriteString("#version: 0.2\n")
	for _, m := range doc.Model.Merges {
		merges.WriteString(m[0] + " " + m[1] + "\n")
	}
	for name, content := range map[string][]byte{"vocab.json": v, "merges.txt": []byte(merges.String())} {
		if err := os.WriteFile(l.Path("model/"+name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(l.Path("model/tokenizer.json")); err != nil {
		t.Fatal(err)
	}
}

func TestLoadSlowBPERepo(t *testing.T) {
	l := genRepo(t, sample.Options{})
	orig, err := os.ReadFile(l.Path("model/tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	fast, err := tokenizer.FromJSON(orig, "tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	writeSlowBPE(t, l)
	m := serveBoth(t, l)
	tok := m.Tokenizer
	roundTrip(t, tok)
	// The special tokens come from tokenizer_config.json's added_tokens_decoder, with the same ids.
	for _, s := range []string{"<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>"} {
		a, ok1 := tok.TokenID(s)
		b, ok2 := fast.TokenID(s)
		if !ok1 || !ok2 || a != b || !tok.IsSpecial(a) {
			t.Errorf("%s: %d %v, fast %d %v", s, a, ok1, b, ok2)
		}
	}
	if len(m.StopIDs) != 1 || tok.VocabSize() != fast.VocabSize() {
		t.Errorf("stop %v, vocab %d vs %d", m.StopIDs, tok.VocabSize(), fast.VocabSize())
	}
	ids, _ := tok.Encode("<|start_header_id|>user<|end_header_id|>", false)
	if want, _ := fast.Encode("<|start_header_id|>user<|end_header_id|>", false); !equalInts(ids, want) {
		t.Errorf("ids %v, fast %v", ids, want)
	}
}

func TestLoadBadSlowTokenizers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, l *sample.Layout)
		want  string
	}{
		{"corrupt tokenizer.model", func(t *testing.T, l *sample.Layout) {
			os.Remove(l.Path("model/tokenizer.json"))
			os.WriteFile(l.Path("model/tokenizer.model"), []byte{0x0a, 0x7f, 0x01}, 0o644)
		}, "could not parse ModelProto"},
		{"bad merges.txt", func(t *testing.T, l *sample.Layout) {
			writeSlowBPE(t, l)
			os.WriteFile(l.Path("model/merges.txt"), []byte("a b c\n"), 0o644)
		}, "merges.txt: line 1"},
		{"vocab.json not JSON", func(t *testing.T, l *sample.Layout) {
			writeSlowBPE(t, l)
			os.WriteFile(l.Path("model/vocab.json"), []byte("{"), 0o644)
		}, "vocab.json: not valid JSON"},
		{"merge outside the vocabulary", func(t *testing.T, l *sample.Layout) {
			writeSlowBPE(t, l)
			os.WriteFile(l.Path("model/vocab.json"), []byte(`{"a": 0, "b": 1, "ab": 2}`), 0o644)
			os.WriteFile(l.Path("model/merges.txt"), []byte("a c\n"), 0o644)
		}, "is not in the vocabulary"},
		{"no tokenizer files", func(t *testing.T, l *sample.Layout) {
			os.Remove(l.Path("model/tokenizer.json"))
		}, "make sure '"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := genRepo(t, sample.Options{})
			tc.setup(t, l)
			_, err := Load(context.Background(), l.ModelDir, l.EngineFile, Options{})
			var le *LoadError
			if !errors.As(err, &le) || le.Kind != "tokenizer" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want tokenizer error containing %q", err, tc.want)
			}
		})
	}
}
