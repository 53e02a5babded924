package checksum_test

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"

	"lukechampine.com/blake3"

	"lifeboat/providers/checksum"
)

// Property: Lifeboat's BLAKE3 (its own tree over the library's kernels) equals the library's
// reference Hasher for any length — the group and chunk boundaries most of all — written in any
// split of writes, and after a Reset.
func TestBLAKE3MatchesReferenceProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	data := make([]byte, 1<<20+3)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	var lengths []int
	for _, k := range []int{0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65} {
		for _, d := range []int{-1, 0, 1} {
			if n := k*16<<10 + d; n >= 0 && n <= len(data) {
				lengths = append(lengths, n)
			}
			if n := k<<10 + d; n >= 0 {
				lengths = append(lengths, n)
			}
		}
	}
	for range 300 {
		lengths = append(lengths, rng.IntN(len(data)+1))
	}
	lengths = append(lengths, len(data))
	h := checksum.New(checksum.BLAKE3)
	for i, n := range lengths {
		want := blake3.Sum256(data[:n])
		h.Reset()
		for p := data[:n]; len(p) > 0; {
			var k int
			switch rng.IntN(4) {
			case 0:
				k = 1 + rng.IntN(100)
			case 1:
				k = 1 + rng.IntN(64<<10)
			case 2:
				k = 16 << 10
			default:
				k = len(p)
			}
			k = min(k, len(p))
			h.Write(p[:k])
			p = p[k:]
		}
		if got := h.Sum(nil); hex.EncodeToString(got) != hex.EncodeToString(want[:]) {
			t.Fatalf("case %d: BLAKE3 of %d bytes = %x, reference %x", i, n, got, want)
		}
		if again := h.Sum([]byte("x")); string(again[1:]) != string(want[:]) || again[0] != 'x' {
			t.Fatalf("case %d: a second Sum (appended) differs", i)
		}
	}
}

// BenchmarkBLAKE3 is the hash of deep verification, in writes of the sizes body reads deliver;
// compare BenchmarkSHA256 (the layer digest) on the same buffer.
func BenchmarkBLAKE3(b *testing.B) {
	buf := make([]byte, 1<<20)
	for _, size := range []int{16 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("writes=%dKiB", size>>10), func(b *testing.B) {
			h := checksum.New(checksum.BLAKE3)
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				for o := 0; o < len(buf); o += size {
					h.Write(buf[o : o+size])
				}
			}
		})
	}
}

func BenchmarkSHA256(b *testing.B) {
	buf := make([]byte, 1<<20)
	h := checksum.New(checksum.SHA256)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		h.Write(buf)
	}
}
