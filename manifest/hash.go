package manifest

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"hash/crc32"
	"io"
	"lifeboat/providers/checksum"
	"sync"
	"sync/atomic"

	"github.com/minio/crc64nvme"
	"github.com/opencontainers/go-digest"
)

// hashChunk is the read size of the one-pass hasher. 1 MiB keeps syscall and channel overhead
// negligible; hashBuffers of them per file in flight bound memory whatever the file size.
const (
	hashChunk   = 1 << 20
	hashBuffers = 4
)

type chunk struct {
	buf  []byte
	n    int
	refs atomic.Int32
}

// HashReader computes every digest of r in one read pass: SHA-256, MD5, CRC32C, CRC64NVME, CRC32
// and BLAKE3. MD5 (~0.7 GB/s per core) is the slowest and cannot be split, so it runs in its own
// goroutine; SHA-256 and the CRCs run in a second and BLAKE3 in a third, over the same buffers:
// one pass, both cores busy. progress, if non-nil, is called with each chunk's length.
func HashReader(ctx context.Context, r io.Reader, progress func(int64)) (Checksums, int64, error) {
	md := md5.New()
	sha := sha256.New()
	c32c := crc32.New(checksum.Castagnoli)
	c32 := crc32.NewIEEE()
	c64 := crc64nvme.New()
	b3 := checksum.New(checksum.BLAKE3)
	rest := io.MultiWriter(sha, c32c, c32, c64)

	free := make(chan *chunk, hashBuffers)
	for range hashBuffers {
		free <- &chunk{buf: make([]byte, hashChunk)}
	}
	toMD5 := make(chan *chunk, hashBuffers)
	toRest := make(chan *chunk, hashBuffers)
	toB3 := make(chan *chunk, hashBuffers)
	release := func(c *chunk) {
		if c.refs.Add(-1) == 0 {
			free <- c
		}
	}
	var wg sync.WaitGroup
	consume := func(in <-chan *chunk, h io.Writer) {
		defer wg.Done()
		for c := range in {
			h.Write(c.buf[:c.n]) // hash.Hash writes never fail
			release(c)
		}
	}
	wg.Add(3)
	go consume(toMD5, md)
	go consume(toRest, rest)
	go consume(toB3, b3)

	var total int64
	var err error
	for {
		if err = ctx.Err(); err != nil {
			break
		}
		c := <-free
		var n int
		n, err = fill(r, c.buf)
		if n > 0 {
			c.n = n
			c.refs.Store(3)
			total += int64(n)
			toMD5 <- c
			toRest <- c
			toB3 <- c
			if progress != nil {
				progress(int64(n))
			}
		} else {
			free <- c
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			break
		}
	}
	close(toMD5)
	close(toRest)
	close(toB3)
	wg.Wait()
	if err != nil {
		return Checksums{}, total, err
	}
	return Checksums{
		SHA256:    hex.EncodeToString(sha.Sum(nil)),
		MD5:       b64(md),
		CRC32C:    b64(c32c),
		CRC64NVME: b64(c64),
		CRC32:     b64(c32),
		BLAKE3:    hex.EncodeToString(b3.Sum(nil)),
	}, total, nil
}

// fill reads until buf is full or the reader ends. Unlike io.ReadFull it passes every error
// through unchanged — io.EOF only for a clean end — so a truncated body (io.ErrUnexpectedEOF from
// a network reader) is never mistaken for the end of the content.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		k, err := r.Read(buf[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// b64 encodes a digest the way the providers do: base64 of the big-endian bytes.
func b64(h hash.Hash) string { return base64.StdEncoding.EncodeToString(h.Sum(nil)) }

// ChecksumsOf hashes a byte slice (small embedded files, tests).
func ChecksumsOf(data []byte) Checksums { return checksum.Of(data) }

func digestOf(hexSHA256 string) digest.Digest {
	return digest.NewDigestFromEncoded(digest.SHA256, hexSHA256)
}
