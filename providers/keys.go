package providers

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyLen is the longest key (relative to the prefix) a Store accepts, in bytes.
const MaxKeyLen = 1024

// ValidateKey reports whether key is a valid object key relative to a store's prefix: non-empty,
// at most MaxKeyLen bytes of valid UTF-8 without control characters or backslashes, slash-separated
// elements that are neither empty (no leading, trailing or doubled "/") nor "." or "..". Spaces and
// any other Unicode are fine. Errors wrap ErrInvalidKey.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if err := ValidatePath(key); err != nil {
		return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, err)
	}
	return nil
}

// ValidateDir checks a List dir: "" or a valid key (a trailing "/" is tolerated and dropped).
func ValidateDir(dir string) (string, error) {
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		return "", nil
	}
	return dir, ValidateKey(dir)
}

// ValidatePath holds the rules shared by keys and store prefixes.
func ValidatePath(p string) error {
	if len(p) > MaxKeyLen {
		return fmt.Errorf("longer than %d bytes", MaxKeyLen)
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("not valid UTF-8")
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("contains control character %U", r)
		}
		if r == '\\' {
			return fmt.Errorf("contains a backslash")
		}
	}
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("absolute (leading /)")
	}
	for _, el := range strings.Split(p, "/") {
		switch el {
		case "":
			return fmt.Errorf("empty path element")
		case ".", "..":
			return fmt.Errorf("%q path element", el)
		}
	}
	return nil
}

// Keyspace maps relative keys onto provider object names under a prefix.
type Keyspace struct {
	Prefix string // "" or "a/b/" (always with a trailing slash)
}

// NewKeyspace is the keyspace of a store prefix, which must be "" or a valid key.
func NewKeyspace(prefix string) (Keyspace, error) {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return Keyspace{}, nil
	}
	if err := ValidatePath(prefix); err != nil {
		return Keyspace{}, fmt.Errorf("prefix %q: %s", prefix, err)
	}
	return Keyspace{Prefix: prefix + "/"}, nil
}

// full returns the provider name of a validated key.
func (k Keyspace) Full(key string) string { return k.Prefix + key }

// listPrefix is the provider prefix under which dir's objects live.
func (k Keyspace) ListPrefix(dir string) string {
	if dir == "" {
		return k.Prefix
	}
	return k.Prefix + dir + "/"
}

// relative turns a listed provider name back into a key; ok is false for names that are not valid
// keys (the caller reports them) and skip is true for folder markers ("dir/" of size 0).
func (k Keyspace) Relative(name string, size int64) (key string, skip bool, err error) {
	rel, found := strings.CutPrefix(name, k.Prefix)
	if !found {
		return "", false, fmt.Errorf("%w: %q is outside the prefix", ErrInvalidKey, name)
	}
	if strings.HasSuffix(rel, "/") && size == 0 {
		return "", true, nil
	}
	if err := ValidateKey(rel); err != nil {
		return "", false, err
	}
	return rel, false, nil
}
