package checksum

import (
	"hash"
	"math/bits"

	"lukechampine.com/blake3/guts"
)

// blake3Group is what one call of the library's AVX-512 (16-way) or AVX2 kernel hashes: 16
// chunks of 1 KiB, a complete subtree of height 4.
const (
	blake3Group       = guts.MaxSIMD * guts.ChunkSize
	blake3GroupHeight = 4 // log2(guts.MaxSIMD)
)

// blake3Hasher is BLAKE3-256 (unkeyed) over lukechampine.com/blake3's compression kernels,
// fed 16 KiB at a time on the caller's goroutine. The library's own Hasher starts a goroutine
// per 16 KiB of every write; on the tens of KiB a deep verify's body reads deliver, that cost
// more than the hashing (0.6–1.3 GB/s against ~3.9 GB/s for the bare kernel here), and deep
// verify already runs one hash per core.
//
// The tree is BLAKE3's: each full group becomes a subtree root pushed on a stack of at most
// one subtree per height, merged as the chunk counter carries (as the reference
// implementation's chaining-value stack does). The last group is kept back until more input
// arrives, since the final node must be the root.
type blake3Hasher struct {
	stack   [64][8]uint32 // subtree chaining values; height i is occupied when bit i of chunks is set
	chunks  uint64        // chunks pushed on the stack
	buf     [blake3Group]byte
	buflen  int
	scratch [32]byte
}

func newBLAKE3() hash.Hash { return &blake3Hasher{} }

func (h *blake3Hasher) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if h.buflen == blake3Group {
			// More input follows, so the buffered group is not the last: push it.
			h.push((*[blake3Group]byte)(&h.buf))
			h.buflen = 0
		}
		if h.buflen == 0 {
			// Whole groups straight from p, keeping the last one back when p ends on it.
			for len(p) > blake3Group {
				h.push((*[blake3Group]byte)(p[:blake3Group]))
				p = p[blake3Group:]
			}
		}
		k := copy(h.buf[h.buflen:], p)
		h.buflen += k
		p = p[k:]
	}
	return n, nil
}

// push adds one full group, not the last, as a subtree of height 4.
func (h *blake3Hasher) push(group *[blake3Group]byte) {
	cv := guts.ChainingValue(guts.CompressBuffer(group, blake3Group, &guts.IV, h.chunks, 0))
	i := blake3GroupHeight
	for h.chunks&(1<<i) != 0 {
		cv = guts.ChainingValue(guts.ParentNode(h.stack[i], cv, &guts.IV, 0))
		i++
	}
	h.stack[i] = cv
	h.chunks += guts.MaxSIMD
}

func (h *blake3Hasher) Sum(b []byte) []byte {
	// The buffered rest (1 to 16 chunks, or none for no input at all) is the rightmost
	// subtree; the stacked ones join it from the lowest height up.
	n := guts.CompressBuffer(&h.buf, h.buflen, &guts.IV, h.chunks, 0)
	for i := bits.TrailingZeros64(h.chunks); i < bits.Len64(h.chunks); i++ {
		if h.chunks&(1<<i) != 0 {
			n = guts.ParentNode(h.stack[i], guts.ChainingValue(n), &guts.IV, 0)
		}
	}
	n.Flags |= guts.FlagRoot
	out := guts.WordsToBytes(guts.CompressNode(n))
	copy(h.scratch[:], out[:32])
	return append(b, h.scratch[:]...)
}

func (h *blake3Hasher) Reset() {
	h.chunks = 0
	h.buflen = 0
}

func (h *blake3Hasher) Size() int      { return 32 }
func (h *blake3Hasher) BlockSize() int { return guts.BlockSize }
