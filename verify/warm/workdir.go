package warm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrUnsafeWorkdir: a working directory another local user could write to, or that someone else
// owns. Boot refuses it: whoever can write there can plant the bundle it launches, the restore
// record that skips the restore, or a symbolic link where it writes the replica's log.
var ErrUnsafeWorkdir = errors.New("unsafe working directory")

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
// that others can write to without the sticky bit (they could swap it for their own).
func PrepareWorkdir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := checkAncestors(filepath.Dir(abs)); err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	// Again, now that every ancestor exists: one created meanwhile by someone else counts.
	if err := checkAncestors(filepath.Dir(abs)); err != nil {
		return err
	}
	return checkOwnDir(abs)
}

// checkOwnDir: dir is a real directory, owned by the caller, writable by nobody else.
func checkOwnDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	uid, me := owner(fi), os.Geteuid()
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symbolic link", ErrUnsafeWorkdir, dir)
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafeWorkdir, dir)
	case uid != me:
		return fmt.Errorf("%w: %s is owned by uid %d, not by you (uid %d)", ErrUnsafeWorkdir, dir, uid, me)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%w: %s is writable by group or others (mode %04o); chmod go-w it", ErrUnsafeWorkdir, dir, fi.Mode().Perm())
	}
	return nil
}

// checkAncestors walks from dir (resolved) up to /: each existing directory is owned by root or
// the caller, and is not writable by group or others unless sticky (like /tmp).
func checkAncestors(dir string) error {
	me := os.Geteuid()
	// The nearest existing ancestor, resolved: links above it are the system's (/var/run → /run).
	for {
		if _, err := os.Lstat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("working directory: %w", err)
		}
		uid := owner(fi)
		if uid != 0 && uid != me {
			return fmt.Errorf("%w: %s (above the working directory) is owned by uid %d", ErrUnsafeWorkdir, p, uid)
		}
		if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return fmt.Errorf("%w: %s (above the working directory) is writable by group or others (mode %04o)", ErrUnsafeWorkdir, p, fi.Mode().Perm())
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
