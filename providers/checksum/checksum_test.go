package checksum_test

import (
	"encoding/base64"
	"encoding/binary"
	"testing"

	"lifeboat/providers/checksum"
)

func be(n int, v uint64) string {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return base64.StdEncoding.EncodeToString(b[8-n:])
}

// The catalogue check values of each CRC over "123456789", and the published MD5/SHA-256 of it.
// Its BLAKE3 is what the reference implementations give (b3sum, and @noble/hashes' blake3).
func TestCheckValues(t *testing.T) {
	data := []byte("123456789")
	want := checksum.Sums{
		SHA256:    "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225",
		MD5:       "JfnnlDI7RTiF9RgfG2JNCw==",
		CRC32C:    be(4, 0xe3069283),
		CRC32:     be(4, 0xcbf43926),
		CRC64NVME: be(8, 0xae8b14860a799888),
		BLAKE3:    "b7d65b48420d1033cb2595293263b6f72eabee20d55e699d0df1973b3c9deed1",
	}
	if got := checksum.Of(data); got != want {
		t.Fatalf("Of = %+v\nwant %+v", got, want)
	}
	for _, alg := range checksum.All {
		h := checksum.New(alg)
		h.Write(data)
		if got := checksum.Sum(alg, h); got != want.Get(alg) {
			t.Errorf("New(%s) = %s, want %s", alg, got, want.Get(alg))
		}
	}
}

// BLAKE3 is a tree hash, and the library hashes big writes in parallel subtrees: streamed in
// writes of every shape, 5,000,003 bytes (many 1 KiB chunks, an odd tail) must still give what
// the reference gives for the whole (@noble/hashes' blake3 over bytes i mod 251; the empty
// input is the published test vector).
func TestBLAKE3Streaming(t *testing.T) {
	data := make([]byte, 5_000_003)
	for i := range data {
		data[i] = byte(i % 251)
	}
	const want = "d461ac7c0dbdb77c084f8f530b67ce764b269443a8ed4c5c56ebd4a312bd2ebc"
	for _, step := range []int{1 << 20, 1<<20 + 1, 64 << 10, 1000, 16 << 10, len(data)} {
		h := checksum.New(checksum.BLAKE3)
		for p := data; len(p) > 0; {
			n := min(step, len(p))
			h.Write(p[:n])
			p = p[n:]
		}
		if got := checksum.Sum(checksum.BLAKE3, h); got != want {
			t.Errorf("BLAKE3 in writes of %d bytes = %s, want %s", step, got, want)
		}
	}
	if got := checksum.Of(nil).BLAKE3; got != "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262" {
		t.Errorf("BLAKE3 of no bytes = %s", got)
	}
}

func TestSetGetValidate(t *testing.T) {
	var s checksum.Sums
	for _, alg := range checksum.All {
		v := checksum.Encode(alg, make([]byte, checksum.Len(alg)))
		s.Set(alg, v)
		if s.Get(alg) != v {
			t.Errorf("%s: Get after Set = %q", alg, s.Get(alg))
		}
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("valid sums: %v", err)
	}
	s.Set(checksum.SHA1, "ignored") // Sums carries no SHA-1
	if s.Get(checksum.SHA1) != "" {
		t.Error("Sums keeps a SHA-1")
	}
	for _, bad := range []checksum.Sums{{SHA256: "abc"}, {CRC32C: "AAAAAAA="}, {MD5: "not base64!"}, {BLAKE3: "abc"}, {BLAKE3: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	if !checksum.Equal(checksum.SHA256, "AB", "ab") || checksum.Equal(checksum.MD5, "AB", "ab") {
		t.Error("Equal: hex is case-insensitive, base64 is not")
	}
}
