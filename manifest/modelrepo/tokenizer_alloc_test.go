package modelrepo

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"
)

// genBPETokenizer writes a BPE tokenizer.json whose vocabulary is every string of 1..depth
// letters of the alphabet, and whose merges build each longer string from its first letter and
// the rest — half as "a b" strings, half as ["a", "b"] pairs, the two forms tokenizers writes.
func genBPETokenizer(alphabet string, depth int) (data []byte, merges int) {
	var b bytes.Buffer
	b.WriteString(`{"version": "1.0", "added_tokens": [{"id": 0, "content": "<s>", "special": true}], "model": {"type": "BPE", "vocab": {`)
	level := []string{""}
	var all []string
	for d := 1; d <= depth; d++ {
		var next []string
		for _, p := range level {
			for _, c := range alphabet {
				next = append(next, p+string(c))
			}
		}
		all = append(all, next...)
		level = next
	}
	for i, tok := range all {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(tok) + ": " + strconv.Itoa(i+1))
	}
	b.WriteString(`}, "merges": [`)
	for _, tok := range all[len(alphabet):] {
		if merges > 0 {
			b.WriteString(", ")
		}
		if merges%2 == 0 {
			b.WriteString(strconv.Quote(tok[:1] + " " + tok[1:]))
		} else {
			b.WriteString(`[` + strconv.Quote(tok[:1]) + `, ` + strconv.Quote(tok[1:]) + `]`)
		}
		merges++
	}
	b.WriteString("]}}\n")
	return b.Bytes(), merges
}

// TestParseTokenizerJSONAllocation: a tokenizer with a million merges costs a small multiple of
// its size (the map[string]any decode it replaced allocated 17×: 549 MB for 32 MB).
func TestParseTokenizerJSONAllocation(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 28 MB tokenizer")
	}
	data, merges := genBPETokenizer("abcdefghijklmnopqrstuvwxyzABCDEF", 4)
	if merges < 1_000_000 {
		t.Fatalf("generated %d merges", merges)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	info, err := ParseTokenizerJSON(data, "tokenizer.json")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if info.Entries != 1_082_400 || info.Size != 1_082_401 || info.Model != "BPE" {
		t.Fatalf("parsed %+v", info)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d merges, %d bytes: %d bytes allocated (%.2f×)", merges, len(data), alloc, float64(alloc)/float64(len(data)))
	if alloc > 3*uint64(len(data)) {
		t.Errorf("allocated %d bytes for a %d-byte tokenizer (%.1f×), want at most 3×", alloc, len(data), float64(alloc)/float64(len(data)))
	}
}

// BenchmarkParseTokenizerJSON128k: a vocabulary of real size (127,550 entries, as Llama 3's
// 128,256) with as many merges.
func BenchmarkParseTokenizerJSON128k(b *testing.B) {
	data, _ := genBPETokenizer("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX", 3)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseTokenizerJSON(data, "tokenizer.json"); err != nil {
			b.Fatal(err)
		}
	}
}
