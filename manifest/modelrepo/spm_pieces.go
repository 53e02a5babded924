package modelrepo

import (
	"encoding/binary"
	"fmt"
	"math"
)

// SentencePiece piece types (sentencepiece.ModelProto.SentencePiece.Type).
const (
	SPMNormal      = 1
	SPMUnknown     = 2
	SPMControl     = 3
	SPMUserDefined = 4
	SPMUnused      = 5
	SPMByte        = 6
)

// SentencePiecePiece is one vocabulary entry of a SentencePiece model; its id is its index.
type SentencePiecePiece struct {
	Piece string
	Score float32
	Type  int // SPMNormal … SPMByte; NORMAL when the field is absent, as in the proto default
}

// SentencePiecePieces returns the pieces of a SentencePiece ModelProto in id order. It checks the
// data exactly as ParseSentencePieceModel does and fails on the same inputs.
func SentencePiecePieces(data []byte, name string) ([]SentencePiecePiece, error) {
	if _, err := ParseSentencePieceModel(data, name); err != nil {
		return nil, err
	}
	var out []SentencePiecePiece
	err := eachProtoField(data, func(f protoField) error {
		if f.num != 1 {
			return nil
		}
		p, err := decodePiece(f.payload)
		if err != nil {
			return fmt.Errorf("pieces[%d]: %v", len(out), err)
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: not a SentencePiece model: %v", name, err)
	}
	return out, nil
}

// decodePiece reads fields 1 (piece), 2 (score, fixed32 float) and 3 (type, varint) of a
// SentencePiece message; the message has already been checked by checkSentencePiece.
func decodePiece(b []byte) (SentencePiecePiece, error) {
	p := SentencePiecePiece{Type: SPMNormal}
	for pos := 0; pos < len(b); {
		tag, n, err := readVarint(b[pos:])
		if err != nil {
			return p, err
		}
		pos += n
		num, wire := tag>>3, int(tag&7)
		switch wire {
		case wireVarint:
			v, n, err := readVarint(b[pos:])
			if err != nil {
				return p, err
			}
			pos += n
			if num == 3 {
				if v > math.MaxInt32 {
					return p, fmt.Errorf("type %d out of range", v)
				}
				p.Type = int(v)
			}
		case wireFixed32:
			if len(b)-pos < 4 {
				return p, fmt.Errorf("truncated fixed32")
			}
			if num == 2 {
				p.Score = math.Float32frombits(binary.LittleEndian.Uint32(b[pos:]))
			}
			pos += 4
		case wireFixed64:
			pos += 8
		case wireBytes:
			l, n, err := readVarint(b[pos:])
			if err != nil {
				return p, err
			}
			pos += n
			if l > uint64(len(b)-pos) {
				return p, fmt.Errorf("truncated field %d", num)
			}
			if num == 1 {
				p.Piece = string(b[pos : pos+int(l)])
			}
			pos += int(l)
		default:
			return p, fmt.Errorf("unsupported wire type %d", wire)
		}
	}
	return p, nil
}
