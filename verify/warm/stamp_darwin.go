package warm

import (
	"os"
	"syscall"
)

// changeStamp is a file's inode change time and inode number (Darwin names the field
// Ctimespec where Linux has Ctim).
func changeStamp(fi os.FileInfo) (ctimeNs int64, ino uint64) {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		return sys.Ctimespec.Nano(), sys.Ino
	}
	return 0, 0
}
