package warm

import (
	"os"
	"syscall"
)

// changeStamp is a file's inode change time and inode number: a rewrite in place or a file
// swapped under the same name and mtime changes one of them.
func changeStamp(fi os.FileInfo) (ctimeNs int64, ino uint64) {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		return sys.Ctim.Nano(), sys.Ino
	}
	return 0, 0
}
