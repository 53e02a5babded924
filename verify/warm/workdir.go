package warm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"lifeboat/providers/localfile"
)

// ErrUnsafeWorkdir: a working directory another local user could write to, or that someone else
// owns. Boot refuses it: whoever can write there can plant the bundle it launches, the restore
// record that skips the restore, or a symbolic link where it writes the replica's log.
var ErrUnsafeWorkdir = localfile.ErrUnsafeDir

// DefaultWorkdir is the per-user working directory of a boot: under the caller's cache directory
// (os.UserCacheDir: $XDG_CACHE_HOME or ~/.cache), never a predictable path in the shared temp
// directory. The name parts are made file-name safe.
func DefaultWorkdir(model, region string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("default working directory: %w (give one with --workdir)", err)
	}
	return filepath.Join(base, "lifeboat", "boot", safeElem(model), safeElem(region)), nil
}

func safeElem(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
	if strings.Trim(s, ".") == "" {
		s = "_"
	}
	return s
}

// PrepareWorkdir creates dir (mode 0700) if it does not exist and refuses, with an error wrapping
// ErrUnsafeWorkdir, a directory that is a symbolic link, is not owned by the caller, or is
// writable by group or others, and one below a directory that another user (not root) owns or
// that others can write to without the sticky bit (they could swap it for their own). The checks
// are localfile.PrepareDir's, the one home they share with file:// state and report directories.
func PrepareWorkdir(dir string) error { return localfile.PrepareDir(dir, "working directory") }
