package providers

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"strings"

	"github.com/minio/crc64nvme"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// digester computes, in one pass over streamed bytes, the checksums a Write was asked to verify plus
// those the provider needs to send, and counts the bytes.
type digester struct {
	want   Checksums
	hashes map[Algorithm]hash.Hash
	n      int64
}

func newDigester(want Checksums, also ...Algorithm) *digester {
	d := &digester{want: want, hashes: map[Algorithm]hash.Hash{}}
	for alg, v := range want.byAlgorithm() {
		if v != "" {
			d.hashes[alg] = newHash(alg)
		}
	}
	for _, alg := range also {
		if d.hashes[alg] == nil {
			d.hashes[alg] = newHash(alg)
		}
	}
	return d
}

func newHash(alg Algorithm) hash.Hash {
	switch alg {
	case SHA256:
		return sha256.New()
	case MD5:
		return md5.New()
	case CRC32C:
		return crc32.New(castagnoli)
	case CRC32:
		return crc32.NewIEEE()
	case CRC64NVME:
		return crc64nvme.New()
	}
	panic("providers: no hash for " + string(alg))
}

func (d *digester) Write(p []byte) (int, error) {
	for _, h := range d.hashes {
		h.Write(p)
	}
	d.n += int64(len(p))
	return len(p), nil
}

// sum returns the manifest encoding of one computed digest.
func (d *digester) sum(alg Algorithm) string {
	h := d.hashes[alg]
	if h == nil {
		return ""
	}
	return encodeSum(alg, h.Sum(nil))
}

func (d *digester) raw(alg Algorithm) []byte { return d.hashes[alg].Sum(nil) }

// check compares the bytes seen with the declared size and checksums.
func (d *digester) check(size int64) error {
	if size > 0 && d.n != size {
		return fmt.Errorf("%w: read %d bytes, expected %d", ErrContentMismatch, d.n, size)
	}
	for alg, want := range d.want.byAlgorithm() {
		if want == "" {
			continue
		}
		got := d.sum(alg)
		if alg == SHA256 {
			want = strings.ToLower(want)
		}
		if got != want {
			return fmt.Errorf("%w: %s is %s, expected %s", ErrContentMismatch, alg, got, want)
		}
	}
	return nil
}

// Value returns the checksum of one algorithm, or "" when it is not set (or the algorithm is one
// Checksums does not carry, such as SHA-1).
func (c Checksums) Value(alg Algorithm) string { return c.byAlgorithm()[alg] }

func (c Checksums) byAlgorithm() map[Algorithm]string {
	return map[Algorithm]string{SHA256: c.SHA256, MD5: c.MD5, CRC32C: c.CRC32C, CRC64NVME: c.CRC64NVME, CRC32: c.CRC32}
}

// validate checks that each given checksum is well formed, so that a typo is an error, not a
// mismatch.
func (c Checksums) validate() error {
	for alg, v := range c.byAlgorithm() {
		if v == "" {
			continue
		}
		if _, err := decodeSum(alg, v); err != nil {
			return fmt.Errorf("checksum %s %q: %w", alg, v, err)
		}
	}
	return nil
}

var digestLen = map[Algorithm]int{SHA256: 32, SHA1: 20, MD5: 16, CRC32C: 4, CRC32: 4, CRC64NVME: 8}

// encodeSum renders a raw digest in the manifest's encoding.
func encodeSum(alg Algorithm, raw []byte) string {
	if alg == SHA256 || alg == SHA1 {
		return hex.EncodeToString(raw)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// decodeSum parses a value in the manifest's encoding.
func decodeSum(alg Algorithm, v string) ([]byte, error) {
	var raw []byte
	var err error
	if alg == SHA256 || alg == SHA1 {
		raw, err = hex.DecodeString(v)
	} else {
		raw, err = base64.StdEncoding.DecodeString(v)
	}
	if err != nil {
		return nil, err
	}
	if n := digestLen[alg]; len(raw) != n {
		return nil, fmt.Errorf("%d bytes, want %d", len(raw), n)
	}
	return raw, nil
}

// nativeChecksum converts a provider's base64 value (S3 reports every checksum that way) into a
// Checksum in the manifest's encoding; values with a "-N" suffix are composite and kept verbatim.
func nativeChecksum(alg Algorithm, v string, composite bool) (Checksum, bool) {
	if v == "" {
		return Checksum{}, false
	}
	if i := strings.LastIndexByte(v, '-'); i > 0 {
		return Checksum{Algorithm: alg, Value: v, Composite: true}, true
	}
	if composite {
		return Checksum{Algorithm: alg, Value: v, Composite: true}, true
	}
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(raw) != digestLen[alg] {
		return Checksum{}, false
	}
	return Checksum{Algorithm: alg, Value: encodeSum(alg, raw)}, true
}

// etagMD5 returns the base64 MD5 an S3 ETag stands for when it is 32 hex digits.
func etagMD5(etag string) (string, bool) {
	e := strings.Trim(etag, `"`)
	if len(e) != 32 {
		return "", false
	}
	raw, err := hex.DecodeString(e)
	if err != nil {
		return "", false
	}
	return base64.StdEncoding.EncodeToString(raw), true
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
