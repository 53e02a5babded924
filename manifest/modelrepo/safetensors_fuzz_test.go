package modelrepo

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzSafetensorsHeader feeds arbitrary bytes to the header parsers: they must never panic, and a
// header they accept must be self-consistent (tensors tile the buffer, the file size adds up).
func FuzzSafetensorsHeader(f *testing.F) {
	addFileSeed(f, "testdata/seeds/adapter_model.safetensors") // a real file written by the sample generator
	f.Add(stFile(stHeader, 28))
	f.Add(stFile(`{"a": {"dtype": "F8_E4M3", "shape": [2, 2], "data_offsets": [0, 4]}}`, 4))
	f.Add(stFile(`{"__metadata__": {}}`, 0))
	f.Add(stFile(`{"a": {"dtype": "F4", "shape": [4], "data_offsets": [0, 2]}}`, 2))
	bomb := make([]byte, 16)
	binary.LittleEndian.PutUint64(bomb, 1<<63)
	f.Add(bomb)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= 8 {
			n := binary.LittleEndian.Uint64(data[:8])
			if n <= uint64(len(data)-8) {
				if h, err := ParseSafetensorsJSON(data[8 : 8+n]); err == nil {
					checkTiling(t, h)
				} else if err.Error() == "" {
					t.Fatal("empty error message")
				}
			}
		}
		h, err := ReadSafetensorsHeader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		checkTiling(t, h)
		if 8+h.HeaderLen+h.DataSize != int64(len(data)) {
			t.Fatalf("header %d + data %d + 8 != file size %d", h.HeaderLen, h.DataSize, len(data))
		}
	})
}

func checkTiling(t *testing.T, h *SafetensorsHeader) {
	t.Helper()
	var pos int64
	for _, tt := range h.Tensors {
		if tt.Begin != pos || tt.End < tt.Begin {
			t.Fatalf("tensor %q at [%d, %d) does not follow %d", tt.Name, tt.Begin, tt.End, pos)
		}
		pos = tt.End
	}
	if pos != h.DataSize {
		t.Fatalf("tensors end at %d, DataSize %d", pos, h.DataSize)
	}
}
