package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkFromJSON loads each family's real tokenizer.json (128k–262k tokens).
func BenchmarkFromJSON(b *testing.B) {
	for _, fam := range families {
		b.Run(fam, func(b *testing.B) {
			p := filepath.Join(familyDir(b, fam), "tokenizer.json")
			data, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := FromJSON(data, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodeCorpus encodes the differential corpus with each family's tokenizer.
func BenchmarkEncodeCorpus(b *testing.B) {
	texts := corpus()
	for _, fam := range families {
		b.Run(fam, func(b *testing.B) {
			tok := loadFamily(b, fam)
			for b.Loop() {
				for _, s := range texts {
					if _, err := tok.Encode(s, true); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
