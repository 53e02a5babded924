package localfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotRegular: the path is a FIFO, device, socket or directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge: the file is larger than the caller's limit.
var ErrTooLarge = errors.New("file too large")

// Open opens name for reading only if it is a regular file (symbolic links are followed). The
// open itself never blocks: it is non-blocking, so a FIFO is seen and refused rather than waited on.
func Open(name string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w (%s)", name, ErrNotRegular, typeName(fi.Mode()))
	}
	return f, fi, nil
}

// ReadFile reads a whole regular file of at most limit bytes. A larger file (or one that grows
// past limit while read) is an error wrapping ErrTooLarge that names the file and the limit.
func ReadFile(name string, limit int64) ([]byte, error) {
	f, fi, err := Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, tooLarge(name, fi.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(name, int64(len(data)), limit)
	}
	return data, nil
}

func tooLarge(name string, n, limit int64) error {
	return fmt.Errorf("%s: %w: %d bytes or more, the limit is %d", name, ErrTooLarge, n, limit)
}

func typeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a plain file"
}

// ErrUnsafeDir: a directory another local user could write to or swap, or that someone else
// owns. Whoever can write there can forge what Lifeboat later trusts (a journal, a restore
// record) or point its writes elsewhere with a symbolic link.
var ErrUnsafeDir = errors.New("unsafe directory")

// PrepareDir creates dir (mode 0700) if it does not exist and refuses, with an error wrapping
// ErrUnsafeDir that names the path and what is wrong, a directory that is a symbolic link, is
// not owned by the caller, or is writable by group or others, and one below a directory that
// another user (not root) owns or that others can write to without the sticky bit. what names
// the directory in messages ("state directory", "report directory").
func PrepareDir(dir, what string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := checkAncestors(filepath.Dir(abs), what); err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	// Again, now that every ancestor exists: one created meanwhile by someone else counts.
	return CheckDir(abs, what)
}

// CheckDir applies PrepareDir's rules to an existing directory without creating anything: for a
// reader that must not trust what it finds in a directory someone else could write (a restore
// record in a boot's working directory).
func CheckDir(dir, what string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := checkAncestors(filepath.Dir(abs), what); err != nil {
		return err
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	uid, me := Owner(fi), os.Geteuid()
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s %s is a symbolic link", ErrUnsafeDir, what, abs)
	case !fi.IsDir():
		return fmt.Errorf("%w: %s %s is not a directory", ErrUnsafeDir, what, abs)
	case uid != me:
		return fmt.Errorf("%w: %s %s is owned by uid %d, not by you (uid %d)", ErrUnsafeDir, what, abs, uid, me)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%w: %s %s is writable by group or others (mode %04o); chmod go-w it", ErrUnsafeDir, what, abs, fi.Mode().Perm())
	}
	return nil
}

// checkAncestors walks from dir (resolved) up to /: each existing directory is owned by root or
// the caller, and is not writable by group or others unless sticky (like /tmp).
func checkAncestors(dir, what string) error {
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
		return fmt.Errorf("%s: %w", what, err)
	}
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		uid := Owner(fi)
		if uid != 0 && uid != me {
			return fmt.Errorf("%w: %s (above the %s) is owned by uid %d", ErrUnsafeDir, p, what, uid)
		}
		if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return fmt.Errorf("%w: %s (above the %s) is writable by group or others (mode %04o)", ErrUnsafeDir, p, what, fi.Mode().Perm())
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// Owner is the uid that owns fi (-1 where the platform does not say).
func Owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
