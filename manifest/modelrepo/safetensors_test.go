package modelrepo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

// stFile assembles a safetensors file from a JSON header and a data buffer of dataLen bytes.
func stFile(header string, dataLen int) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(make([]byte, dataLen))
	return b.Bytes()
}

const stHeader = `{"__metadata__": {"format": "pt"}, "b": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [16, 28]}, "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}`

func TestReadSafetensorsHeader(t *testing.T) {
	f := stFile(stHeader, 28)
	h, err := ReadSafetensorsHeader(bytes.NewReader(f), int64(len(f)))
	if err != nil {
		t.Fatal(err)
	}
	if h.DataSize != 28 || len(h.Tensors) != 2 || h.Tensors[0].Name != "a" || h.Metadata["format"] != "pt" || h.HeaderLen != int64(len(stHeader)) {
		t.Errorf("parsed %+v", h)
	}
	if tt, ok := h.Tensor("b"); !ok || tt.Elements() != 6 {
		t.Errorf("Tensor(b) = %+v %v", tt, ok)
	}
	bomb := make([]byte, 16)
	binary.LittleEndian.PutUint64(bomb, 1<<40)
	for _, tc := range []struct {
		name      string
		file      []byte
		size      int64
		want      string
		truncated bool
	}{
		{"shorter than 8 bytes", []byte{1, 2, 3}, 3, "shorter than the 8-byte header length", true},
		{"header-length bomb", bomb, 16, "header-length bomb", false},
		{"header past the end", stFile(stHeader, 0)[:40], 40, "runs past the end", true},
		{"data truncated", f[:len(f)-1], int64(len(f) - 1), "holds only 27", true},
		{"trailing bytes", stFile(stHeader, 30), int64(len(stFile(stHeader, 30))), "2 trailing bytes", false},
		{"reader shorter than size", f[:20], int64(len(f)), "read", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadSafetensorsHeader(bytes.NewReader(tc.file), tc.size)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if errors.Is(err, ErrTruncated) != tc.truncated {
				t.Errorf("errors.Is(ErrTruncated) = %v, want %v", !tc.truncated, tc.truncated)
			}
		})
	}
}

// countingReader fails the test if more than the header is read.
type countingReader struct {
	r   io.ReaderAt
	max int64
	t   *testing.T
}

func (c countingReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > c.max {
		c.t.Errorf("read of %d bytes at %d goes past the header (%d bytes)", len(p), off, c.max)
	}
	return c.r.ReadAt(p, off)
}

func TestReadSafetensorsHeaderReadsOnlyHeader(t *testing.T) {
	f := stFile(stHeader, 1<<20-4) // data not covered: size check fails, but only after the header
	f = f[:8+len(stHeader)]
	_, _ = ReadSafetensorsHeader(countingReader{bytes.NewReader(f), int64(8 + len(stHeader)), t}, 1<<30)
}

func TestParseSafetensorsJSON(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not an object", `[]`, "header is not a JSON object"},
		{"garbage", `{"a": `, "tensor \"a\""},
		{"trailing", `{} {}`, "trailing data"},
		{"duplicate", `{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}`, `lists "a" twice`},
		{"missing field", `{"a": {"dtype": "U8", "shape": [1]}}`, "needs dtype, shape and data_offsets"},
		{"unknown dtype", `{"a": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 1]}}`, `unknown dtype "Q4"`},
		{"bad offsets", `{"a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 0]}}`, "begin <= end"},
		{"three offsets", `{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1, 2]}}`, "begin <= end"},
		{"negative dim", `{"a": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}}`, "negative dimension"},
		{"overflow", `{"a": {"dtype": "F32", "shape": [4294967296, 4294967296, 4], "data_offsets": [0, 1]}}`, "overflows"},
		{"size mismatch", `{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}`, "span 4 bytes but F32[2] needs 8"},
		{"gap", `{"a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}`, "gap in the data buffer"},
		{"overlap", `{"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}, "b": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}`, "overlaps"},
		{"metadata not strings", `{"__metadata__": {"a": 1}}`, "__metadata__ must map strings to strings"},
		{"sub-byte", `{"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 1]}}`, "do not fill whole bytes"},
		{"float offsets", `{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0.5, 1]}}`, "tensor \"a\""},
	} {
		if _, err := ParseSafetensorsJSON([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	h, err := ParseSafetensorsJSON([]byte(`{"s": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}, "e": {"dtype": "F16", "shape": [0, 5], "data_offsets": [4, 4]}}`))
	if err != nil || h.DataSize != 4 {
		t.Errorf("scalar and empty tensors: %v %+v", err, h)
	}
}
