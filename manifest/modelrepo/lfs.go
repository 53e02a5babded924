package modelrepo

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// MaxLFSPointerSize is the largest file that can be a Git LFS pointer: the spec caps pointers
// below 1024 bytes, so only small files need to be read to find one.
const MaxLFSPointerSize = 1024

// lfsVersions are the version lines of Git LFS pointers (the second is the pre-1.0 name).
var lfsVersions = []string{"version https://git-lfs.github.com/spec/v1", "version https://hawser.github.com/spec/v1"}

// LFSPointer is a parsed Git LFS pointer file: the stand-in git leaves when the LFS object was
// never downloaded ("smudged").
type LFSPointer struct {
	OID  string // sha256 hex of the real content
	Size int64  // size of the real content
}

// LooksLikeLFSPointer reports whether head (the first bytes of a file) starts like an LFS pointer.
func LooksLikeLFSPointer(head []byte) bool {
	for _, v := range lfsVersions {
		if bytes.HasPrefix(head, []byte(v)) {
			return true
		}
	}
	return false
}

// ParseLFSPointer parses a pointer file: "key value" lines, a version line first, then an
// "oid sha256:<64 hex>" and a "size <bytes>" line.
func ParseLFSPointer(data []byte, name string) (*LFSPointer, error) {
	if len(data) >= MaxLFSPointerSize {
		return nil, fmt.Errorf("%s: %d bytes is too large for a Git LFS pointer", name, len(data))
	}
	if !LooksLikeLFSPointer(data) {
		return nil, fmt.Errorf("%s: not a Git LFS pointer (no version line)", name)
	}
	p := &LFSPointer{Size: -1}
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		key, val, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("%s: line %d: want \"key value\", got %q", name, i+1, line)
		}
		switch key {
		case "oid":
			hash, ok := strings.CutPrefix(val, "sha256:")
			if _, err := hex.DecodeString(hash); !ok || err != nil || len(hash) != 64 {
				return nil, fmt.Errorf("%s: line %d: oid %q is not sha256:<64 hex digits>", name, i+1, val)
			}
			p.OID = hash
		case "size":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%s: line %d: size %q is not a byte count", name, i+1, val)
			}
			p.Size = n
		}
	}
	if p.OID == "" || p.Size < 0 {
		return nil, fmt.Errorf("%s: Git LFS pointer without oid or size line", name)
	}
	return p, nil
}
