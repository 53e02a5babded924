package modelrepo

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// A SentencePiece tokenizer.model is a serialized sentencepiece.ModelProto. Only its wire format is
// checked, which needs no protobuf dependency: the message must parse field by field, field 1
// (repeated SentencePiece pieces) must hold at least one piece, and each piece must parse with its
// known fields (1 piece: string, 2 score: float, 3 type: enum) of the right wire types.

// protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5 // 3 and 4 are the deprecated groups, which ModelProto does not use
)

// pieceWire is the wire type of each known field of a SentencePiece message.
var pieceWire = map[uint64]int{1: wireBytes, 2: wireFixed32, 3: wireVarint}

var errVarint = errors.New("malformed varint")

// readVarint decodes a base-128 varint of at most 10 bytes.
func readVarint(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		c := b[i]
		if i == 9 && c > 1 {
			return 0, 0, errVarint
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errVarint
}

// protoField is one field of a message: its number, wire type and, for length-delimited fields,
// the payload.
type protoField struct {
	num     uint64
	wire    int
	payload []byte
	offset  int // byte offset of the field's tag in the message
}

// eachProtoField walks a message's fields; every length is checked against what is left, so a
// corrupt length cannot make it allocate or read out of bounds.
func eachProtoField(b []byte, fn func(protoField) error) error {
	for pos := 0; pos < len(b); {
		start := pos
		tag, n, err := readVarint(b[pos:])
		if err != nil {
			return fmt.Errorf("byte %d: field tag: %w", start, err)
		}
		pos += n
		f := protoField{num: tag >> 3, wire: int(tag & 7), offset: start}
		if f.num == 0 || f.num > 1<<29-1 {
			return fmt.Errorf("byte %d: invalid field number %d", start, f.num)
		}
		switch f.wire {
		case wireVarint:
			_, n, err := readVarint(b[pos:])
			if err != nil {
				return fmt.Errorf("byte %d: field %d: %w", start, f.num, err)
			}
			pos += n
		case wireFixed64, wireFixed32:
			w := 8
			if f.wire == wireFixed32 {
				w = 4
			}
			if len(b)-pos < w {
				return fmt.Errorf("byte %d: field %d: truncated %d-byte value", start, f.num, w)
			}
			pos += w
		case wireBytes:
			l, n, err := readVarint(b[pos:])
			if err != nil {
				return fmt.Errorf("byte %d: field %d: length: %w", start, f.num, err)
			}
			pos += n
			if l > uint64(len(b)-pos) {
				return fmt.Errorf("byte %d: field %d: length %d runs past the end of the data", start, f.num, l)
			}
			f.payload = b[pos : pos+int(l)]
			pos += int(l)
		default:
			return fmt.Errorf("byte %d: field %d: unsupported wire type %d", start, f.num, f.wire)
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// ParseSentencePieceModel checks that data is a SentencePiece ModelProto with at least one piece.
func ParseSentencePieceModel(data []byte, name string) (*TokenizerInfo, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%s: empty file", name)
	}
	pieces := 0
	err := eachProtoField(data, func(f protoField) error {
		if f.num != 1 {
			return nil // trainer_spec, normalizer_spec, … are not needed here
		}
		if f.wire != wireBytes {
			return fmt.Errorf("byte %d: field pieces has wire type %d, want a message", f.offset, f.wire)
		}
		if err := checkSentencePiece(f.payload); err != nil {
			return fmt.Errorf("pieces[%d]: %v", pieces, err)
		}
		pieces++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: not a SentencePiece model: %v", name, err)
	}
	if pieces == 0 {
		return nil, fmt.Errorf("%s: not a SentencePiece model: no pieces", name)
	}
	return &TokenizerInfo{Source: name, Model: "SentencePiece", Size: int64(pieces), Entries: pieces}, nil
}

func checkSentencePiece(b []byte) error {
	hasPiece := false
	err := eachProtoField(b, func(f protoField) error {
		if want, known := pieceWire[f.num]; known && f.wire != want {
			return fmt.Errorf("field %d has wire type %d, want %d", f.num, f.wire, want)
		}
		if f.num == 1 {
			if !utf8.Valid(f.payload) {
				return fmt.Errorf("piece is not UTF-8")
			}
			hasPiece = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !hasPiece {
		return fmt.Errorf("no piece string")
	}
	return nil
}
