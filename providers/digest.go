package providers

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"

	"lifeboat/providers/checksum"
)

// Digester computes, in one pass over streamed bytes, the checksums a Write was asked to verify plus
// those the provider needs to send, and counts the bytes.
type Digester struct {
	want   Checksums
	hashes map[Algorithm]hash.Hash
	N      int64
}

// NewDigester hashes for the checksums in want plus the algorithms in also.
func NewDigester(want Checksums, also ...Algorithm) *Digester {
	d := &Digester{want: want, hashes: map[Algorithm]hash.Hash{}}
	for _, alg := range checksum.Recorded {
		if want.Get(alg) != "" {
			d.hashes[alg] = checksum.New(alg)
		}
	}
	for _, alg := range also {
		if d.hashes[alg] == nil {
			d.hashes[alg] = checksum.New(alg)
		}
	}
	return d
}

func (d *Digester) Write(p []byte) (int, error) {
	for _, h := range d.hashes {
		h.Write(p)
	}
	d.N += int64(len(p))
	return len(p), nil
}

// sum returns the manifest encoding of one computed digest.
func (d *Digester) Sum(alg Algorithm) string {
	h := d.hashes[alg]
	if h == nil {
		return ""
	}
	return checksum.Sum(alg, h)
}

func (d *Digester) Raw(alg Algorithm) []byte { return d.hashes[alg].Sum(nil) }

// check compares the bytes seen with the declared size and checksums.
func (d *Digester) Check(size int64) error {
	if size > 0 && d.N != size {
		return fmt.Errorf("%w: read %d bytes, expected %d", ErrContentMismatch, d.N, size)
	}
	for _, alg := range checksum.Recorded {
		want := d.want.Get(alg)
		if want == "" {
			continue
		}
		got := d.Sum(alg)
		if alg == SHA256 {
			want = strings.ToLower(want)
		}
		if got != want {
			return fmt.Errorf("%w: %s is %s, expected %s", ErrContentMismatch, alg, got, want)
		}
	}
	return nil
}

// NativeChecksum converts a provider's base64 value (S3 reports every checksum that way) into a
// Checksum in the manifest's encoding; values with a "-N" suffix are composite and kept verbatim.
func NativeChecksum(alg Algorithm, v string, composite bool) (Checksum, bool) {
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
	if err != nil || len(raw) != checksum.Len(alg) {
		return Checksum{}, false
	}
	return Checksum{Algorithm: alg, Value: checksum.Encode(alg, raw)}, true
}

// ETagMD5 returns the base64 MD5 an S3 ETag stands for when it is 32 hex digits.
func ETagMD5(etag string) (string, bool) {
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
