package checksum

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
	"strings"

	"github.com/minio/crc64nvme"
	"lukechampine.com/blake3"
)

// Algorithm names a checksum algorithm, as the manifest does.
type Algorithm string

const (
	SHA256    Algorithm = "sha256"
	SHA1      Algorithm = "sha1"
	MD5       Algorithm = "md5"
	CRC32C    Algorithm = "crc32c"
	CRC32     Algorithm = "crc32" // IEEE polynomial
	CRC64NVME Algorithm = "crc64nvme"
	// BLAKE3 (256-bit) is what deep verification re-hashes with when the manifest records it:
	// as collision-resistant as SHA-256 but faster per core, and no store reports it, so it is
	// never compared with a store's metadata.
	BLAKE3 Algorithm = "blake3"
)

// Recorded are the algorithms a Sums carries that stores can also report or check, in the
// order verdicts name them. BLAKE3, which no store knows, is not among them.
var Recorded = []Algorithm{SHA256, CRC64NVME, CRC32C, CRC32, MD5}

// All are every algorithm a Sums carries: Recorded, then BLAKE3.
var All = []Algorithm{SHA256, CRC64NVME, CRC32C, CRC32, MD5, BLAKE3}

// Castagnoli is the CRC32C table; building it once is what crc32.MakeTable asks of callers.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Len is the digest length in bytes of each algorithm.
func Len(alg Algorithm) int {
	switch alg {
	case SHA256, BLAKE3:
		return sha256.Size
	case SHA1:
		return sha1.Size
	case MD5:
		return md5.Size
	case CRC32C, CRC32:
		return 4
	case CRC64NVME:
		return 8
	}
	return 0
}

// New returns a hasher for alg, or nil for an algorithm Lifeboat does not compute.
func New(alg Algorithm) hash.Hash {
	switch alg {
	case SHA256:
		return sha256.New()
	case SHA1:
		return sha1.New()
	case MD5:
		return md5.New()
	case CRC32C:
		return crc32.New(Castagnoli)
	case CRC32:
		return crc32.NewIEEE()
	case CRC64NVME:
		return crc64nvme.New()
	case BLAKE3:
		return newBLAKE3()
	}
	return nil
}

// Sums are the provider-comparable digests of one file, each in the manifest's encoding; empty
// fields are unknown (or, in a write, not checked). JSON names are the algorithm names.
type Sums struct {
	SHA256    string `json:"sha256,omitempty"`    // lower-case hex (also the layer digest)
	MD5       string `json:"md5,omitempty"`       // base64
	CRC32C    string `json:"crc32c,omitempty"`    // base64, big-endian
	CRC64NVME string `json:"crc64nvme,omitempty"` // base64, big-endian
	CRC32     string `json:"crc32,omitempty"`     // base64, big-endian, IEEE polynomial
	BLAKE3    string `json:"blake3,omitempty"`    // lower-case hex, 32 bytes (as b3sum prints it)
}

// Proof is the cryptographic digest that proves a file's bytes: BLAKE3 when the sums carry it
// (about 2.7× faster per core than SHA-256, and as collision-resistant), else SHA-256.
func (s Sums) Proof() Algorithm {
	if s.BLAKE3 != "" {
		return BLAKE3
	}
	return SHA256
}

// Get returns the value of one algorithm, or "" when it is not set (or not one Sums carries).
func (s Sums) Get(alg Algorithm) string {
	if p := s.field(alg); p != nil {
		return *p
	}
	return ""
}

// Set records the value of one algorithm; an algorithm Sums does not carry is ignored.
func (s *Sums) Set(alg Algorithm, v string) {
	if p := s.field(alg); p != nil {
		*p = v
	}
}

func (s *Sums) field(alg Algorithm) *string {
	switch alg {
	case SHA256:
		return &s.SHA256
	case MD5:
		return &s.MD5
	case CRC32C:
		return &s.CRC32C
	case CRC64NVME:
		return &s.CRC64NVME
	case CRC32:
		return &s.CRC32
	case BLAKE3:
		return &s.BLAKE3
	}
	return nil
}

// Validate checks that each value set is well formed, so that a typo is an error, not a mismatch.
func (s Sums) Validate() error {
	for _, alg := range All {
		if v := s.Get(alg); v != "" {
			if _, err := Decode(alg, v); err != nil {
				return fmt.Errorf("checksum %s %q: %w", alg, v, err)
			}
		}
	}
	return nil
}

// Of hashes a byte slice with every recorded algorithm (small embedded files, tests).
func Of(data []byte) Sums {
	s := sha256.Sum256(data)
	m := md5.Sum(data)
	var c4 [4]byte
	var c8 [8]byte
	binary.BigEndian.PutUint32(c4[:], crc32.Checksum(data, Castagnoli))
	crc32c := b64(c4[:])
	binary.BigEndian.PutUint32(c4[:], crc32.ChecksumIEEE(data))
	crc := b64(c4[:])
	binary.BigEndian.PutUint64(c8[:], crc64nvme.Checksum(data))
	b3 := blake3.Sum256(data)
	return Sums{SHA256: hex.EncodeToString(s[:]), MD5: b64(m[:]), CRC32C: crc32c, CRC64NVME: b64(c8[:]), CRC32: crc,
		BLAKE3: hex.EncodeToString(b3[:])}
}

var b64 = base64.StdEncoding.EncodeToString

// Encode renders a raw digest in the manifest's encoding.
func Encode(alg Algorithm, raw []byte) string {
	if isHex(alg) {
		return hex.EncodeToString(raw)
	}
	return b64(raw)
}

// Sum is Encode of h's digest.
func Sum(alg Algorithm, h hash.Hash) string { return Encode(alg, h.Sum(nil)) }

// Decode parses a value in the manifest's encoding and checks its length.
func Decode(alg Algorithm, v string) ([]byte, error) {
	var raw []byte
	var err error
	if isHex(alg) {
		raw, err = hex.DecodeString(v)
	} else {
		raw, err = base64.StdEncoding.DecodeString(v)
	}
	if err != nil {
		return nil, err
	}
	if n := Len(alg); len(raw) != n {
		return nil, fmt.Errorf("%d bytes, want %d", len(raw), n)
	}
	return raw, nil
}

// Equal compares two values of one algorithm: hex case-insensitively, base64 exactly.
func Equal(alg Algorithm, a, b string) bool {
	if isHex(alg) {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// isHex says whether the manifest writes alg's digests in hex (the cryptographic hashes, as
// sha256sum and b3sum print them) rather than base64 (as the clouds report their checksums).
func isHex(alg Algorithm) bool { return alg == SHA256 || alg == SHA1 || alg == BLAKE3 }
