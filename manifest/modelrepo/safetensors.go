package modelrepo

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"strings"
)

// MaxSafetensorsHeader is the reference parser's bound on the JSON header length.
const MaxSafetensorsHeader = 100_000_000

// dtypeBits is the width of each safetensors dtype. Sub-byte types pack tightly.
var dtypeBits = map[string]int{
	"BOOL": 8, "U8": 8, "I8": 8, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8,
	"U16": 16, "I16": 16, "F16": 16, "BF16": 16,
	"U32": 32, "I32": 32, "F32": 32,
	"U64": 64, "I64": 64, "F64": 64, "C64": 64,
	"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}

// Tensor is one entry of a safetensors header.
type Tensor struct {
	Name  string
	DType string
	Shape []int64
	Begin int64 // offsets relative to the data buffer
	End   int64
}

// Elements is the product of the shape (1 for a scalar).
func (t Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// SafetensorsHeader is a parsed and validated safetensors header.
type SafetensorsHeader struct {
	HeaderLen int64             // N, the JSON length
	DataSize  int64             // bytes of the data buffer
	Tensors   []Tensor          // ordered by Begin
	Metadata  map[string]string // "__metadata__", may be nil
}

// Tensor returns the named tensor.
func (h *SafetensorsHeader) Tensor(name string) (Tensor, bool) {
	for _, t := range h.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// ErrTruncated marks a file whose size disagrees with its own header — a partial download.
// Test for it with errors.Is; the error's text describes the sizes.
var ErrTruncated = errors.New("truncated")

type truncatedError struct{ msg string }

func (e *truncatedError) Error() string        { return e.msg }
func (e *truncatedError) Is(target error) bool { return target == ErrTruncated }

func truncated(format string, args ...any) error {
	return &truncatedError{fmt.Sprintf(format, args...)}
}

// ReadSafetensorsHeader reads and validates the header of a safetensors file of the given size,
// reading only the header bytes. It applies the reference parser's checks: header length bounds,
// JSON, known dtypes, sizes equal to elements × dtype size, offsets tiling the buffer exactly (so a
// truncated file is caught without reading its data), no duplicate names.
func ReadSafetensorsHeader(r io.ReaderAt, size int64) (*SafetensorsHeader, error) {
	if size < 8 {
		return nil, truncated("file is %d bytes, shorter than the 8-byte header length", size)
	}
	var lenBuf [8]byte
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("read header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxSafetensorsHeader {
		return nil, fmt.Errorf("header length %d exceeds the %d-byte limit (corrupt file or header-length bomb)", n, MaxSafetensorsHeader)
	}
	if int64(n) > size-8 {
		return nil, truncated("header length %d runs past the end of the %d-byte file", n, size)
	}
	hdr := make([]byte, n)
	if _, err := r.ReadAt(hdr, 8); err != nil {
		return nil, fmt.Errorf("read %d-byte header: %w", n, err)
	}
	h, err := ParseSafetensorsJSON(hdr)
	if err != nil {
		return nil, err
	}
	h.HeaderLen = int64(n)
	want := size - 8 - int64(n)
	if h.DataSize != want {
		if h.DataSize > want {
			return nil, truncated("tensors end at byte %d of the data buffer but the file holds only %d", h.DataSize, want)
		}
		return nil, fmt.Errorf("tensors end at byte %d of the data buffer but the file holds %d: %d trailing bytes not covered by any tensor", h.DataSize, want, want-h.DataSize)
	}
	return h, nil
}

// ParseSafetensorsJSON validates the JSON header alone (everything but the file-size check);
// DataSize is set to where the last tensor ends.
func ParseSafetensorsJSON(hdr []byte) (*SafetensorsHeader, error) {
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("header is not a JSON object")
	}
	h := &SafetensorsHeader{}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("header JSON: %v", err)
		}
		name, _ := tok.(string)
		if seen[name] {
			return nil, fmt.Errorf("header lists %q twice", name)
		}
		seen[name] = true
		if name == "__metadata__" {
			var md map[string]string
			if err := dec.Decode(&md); err != nil {
				return nil, fmt.Errorf("header __metadata__ must map strings to strings: %v", err)
			}
			h.Metadata = md
			continue
		}
		var e struct {
			DType   *string   `json:"dtype"`
			Shape   *[]int64  `json:"shape"`
			Offsets *[]uint64 `json:"data_offsets"`
		}
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("tensor %q: %v", name, err)
		}
		if e.DType == nil || e.Shape == nil || e.Offsets == nil {
			return nil, fmt.Errorf("tensor %q: needs dtype, shape and data_offsets", name)
		}
		b, ok := dtypeBits[*e.DType]
		if !ok {
			return nil, fmt.Errorf("tensor %q: unknown dtype %q", name, *e.DType)
		}
		if len(*e.Offsets) != 2 || (*e.Offsets)[0] > (*e.Offsets)[1] || (*e.Offsets)[1] > math.MaxInt64 {
			return nil, fmt.Errorf("tensor %q: data_offsets %v must be [begin, end] with begin <= end", name, *e.Offsets)
		}
		elems := uint64(1)
		for _, d := range *e.Shape {
			if d < 0 {
				return nil, fmt.Errorf("tensor %q: negative dimension in shape %v", name, *e.Shape)
			}
			hi, lo := bits.Mul64(elems, uint64(d))
			if hi != 0 || lo > math.MaxInt64/64 {
				return nil, fmt.Errorf("tensor %q: shape %v overflows", name, *e.Shape)
			}
			elems = lo
		}
		nbits := elems * uint64(b)
		if nbits%8 != 0 {
			return nil, fmt.Errorf("tensor %q: %d elements of %s do not fill whole bytes", name, elems, *e.DType)
		}
		t := Tensor{Name: name, DType: *e.DType, Shape: *e.Shape, Begin: int64((*e.Offsets)[0]), End: int64((*e.Offsets)[1])}
		if got, want := t.End-t.Begin, int64(nbits/8); got != want {
			return nil, fmt.Errorf("tensor %q: data_offsets span %d bytes but %s%v needs %d", name, got, t.DType, t.Shape, want)
		}
		h.Tensors = append(h.Tensors, t)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("header JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("header JSON: trailing data after the object")
	}
	sort.Slice(h.Tensors, func(i, j int) bool {
		a, b := h.Tensors[i], h.Tensors[j]
		if a.Begin != b.Begin {
			return a.Begin < b.Begin
		}
		return a.End < b.End
	})
	var pos int64
	for _, t := range h.Tensors {
		if t.Begin != pos {
			if t.Begin < pos {
				return nil, fmt.Errorf("tensor %q overlaps the previous tensor (begins at %d, previous ends at %d)", t.Name, t.Begin, pos)
			}
			return nil, fmt.Errorf("gap in the data buffer before tensor %q (begins at %d, previous ends at %d)", t.Name, t.Begin, pos)
		}
		pos = t.End
	}
	h.DataSize = pos
	return h, nil
}

// IsMXFP4Blocks reports an MXFP4 weight (gpt-oss experts): a U8 "*_blocks" tensor whose bytes
// each pack two FP4 (E2M1) values, in blocks of 32 values (16 bytes).
// Lint, engine-sim and the parameter count all ask it here.
func IsMXFP4Blocks(name, dtype string) bool {
	return strings.HasSuffix(name, "_blocks") && dtype == "U8"
}

// IsMXFP4Scales reports the scales of an MXFP4 weight: a U8 "*_scales" tensor of E8M0
// exponents, one per block of 32 values. They scale parameters; they are not parameters.
func IsMXFP4Scales(name, dtype string) bool {
	return strings.HasSuffix(name, "_scales") && dtype == "U8"
}
