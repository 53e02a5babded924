package modelrepo

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// spPiece encodes one SentencePiece message {1: piece, 2: score, 3: type}.
func spPiece(piece string, score float32, typ int) []byte {
	msg := protoBytes(1, []byte(piece))
	msg = append(msg, 0x15)
	msg = binary.LittleEndian.AppendUint32(msg, math.Float32bits(score))
	msg = append(msg, 0x18)
	msg = binary.AppendUvarint(msg, uint64(typ))
	return protoBytes(1, msg)
}

func protoBytes(field int, b []byte) []byte {
	out := binary.AppendUvarint(nil, uint64(field<<3|wireBytes))
	out = binary.AppendUvarint(out, uint64(len(b)))
	return append(out, b...)
}

func TestSentencePiecePieces(t *testing.T) {
	long := strings.Repeat("x", 200) // a length that needs a two-byte varint
	var data []byte
	data = append(data, spPiece("<unk>", 0, SPMUnknown)...)
	data = append(data, spPiece("<s>", 0, SPMControl)...)
	data = append(data, spPiece("<0x41>", 0, SPMByte)...)
	data = append(data, spPiece("▁hi", -2.5, SPMNormal)...)
	data = append(data, spPiece(long, -7, SPMUserDefined)...)
	data = append(data, protoBytes(1, protoBytes(1, []byte("bare")))...) // no score, no type
	data = append(data, 0x12, 0x02, 0x08, 0x01)                          // trainer_spec, skipped
	got, err := SentencePiecePieces(data, "tokenizer.model")
	if err != nil {
		t.Fatal(err)
	}
	want := []SentencePiecePiece{
		{"<unk>", 0, SPMUnknown}, {"<s>", 0, SPMControl}, {"<0x41>", 0, SPMByte},
		{"▁hi", -2.5, SPMNormal}, {long, -7, SPMUserDefined}, {"bare", 0, SPMNormal},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d pieces, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("piece %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	// The helper of tokenizer_test.go (score -1, NORMAL).
	got, err = SentencePiecePieces(spModel("<unk>", "▁a"), "m")
	if err != nil || len(got) != 2 || got[1] != (SentencePiecePiece{"▁a", -1, SPMNormal}) {
		t.Errorf("spModel: %v %+v", err, got)
	}
	for _, bad := range [][]byte{nil, {0x0b}, {0x08, 0x01}, {0x0a, 0x05, 0x0a, 0x01, 'a', 0x10, 0x01}, {0x12, 0x00}} {
		if _, err := SentencePiecePieces(bad, "tokenizer.model"); err == nil || !strings.Contains(err.Error(), "tokenizer.model") {
			t.Errorf("%x: err %v", bad, err)
		}
	}
}
