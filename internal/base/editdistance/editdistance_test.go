package editdistance

import (
	"math/rand/v2"
	"testing"
)

func TestLevenshtein(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"manifest", "manfiest", 2},
		{"verify", "verfy", 1}, {"kitten", "sitting", 3}, {"llama", "llama", 0},
	} {
		if d := Levenshtein(c.a, c.b); d != c.d {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", c.a, c.b, d, c.d)
		}
	}
}

// A metric: symmetric, zero only for equal strings, within the triangle inequality, and bounded
// by the longer length — over many random short strings of a small alphabet.
func TestLevenshteinIsAMetric(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = "abc"[r.IntN(3)]
		}
		return string(b)
	}
	for range 20000 {
		a, b, c := word(), word(), word()
		ab, ba := Levenshtein(a, b), Levenshtein(b, a)
		if ab != ba || (ab == 0) != (a == b) || ab > max(len(a), len(b)) ||
			Levenshtein(a, c) > ab+Levenshtein(b, c) {
			t.Fatalf("not a metric on %q %q %q", a, b, c)
		}
	}
}
