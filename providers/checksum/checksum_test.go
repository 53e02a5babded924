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
func TestCheckValues(t *testing.T) {
	data := []byte("123456789")
	want := checksum.Sums{
		SHA256:    "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225",
		MD5:       "JfnnlDI7RTiF9RgfG2JNCw==",
		CRC32C:    be(4, 0xe3069283),
		CRC32:     be(4, 0xcbf43926),
		CRC64NVME: be(8, 0xae8b14860a799888),
	}
	if got := checksum.Of(data); got != want {
		t.Fatalf("Of = %+v\nwant %+v", got, want)
	}
	for _, alg := range checksum.Recorded {
		h := checksum.New(alg)
		h.Write(data)
		if got := checksum.Sum(alg, h); got != want.Get(alg) {
			t.Errorf("New(%s) = %s, want %s", alg, got, want.Get(alg))
		}
	}
}

func TestSetGetValidate(t *testing.T) {
	var s checksum.Sums
	for _, alg := range checksum.Recorded {
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
	for _, bad := range []checksum.Sums{{SHA256: "abc"}, {CRC32C: "AAAAAAA="}, {MD5: "not base64!"}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	if !checksum.Equal(checksum.SHA256, "AB", "ab") || checksum.Equal(checksum.MD5, "AB", "ab") {
		t.Error("Equal: hex is case-insensitive, base64 is not")
	}
}
