package emulators

import (
	"os"
	"path/filepath"
	"syscall"
)

// supportsXattr reports whether dir's file system takes user extended attributes, which
// versitygw's posix backend keeps its metadata in.
func supportsXattr(dir string) bool {
	f := filepath.Join(dir, ".xattr-probe")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		return false
	}
	defer os.Remove(f)
	return syscall.Setxattr(f, "user.lifeboat.probe", []byte("1"), 0) == nil
}
