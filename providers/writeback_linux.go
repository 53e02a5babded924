package providers

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing f's bytes [off, off+n) to disk without waiting
// for them (sync_file_range SYNC_FILE_RANGE_WRITE): the fsync that follows the last byte then
// finds most of them on disk already. It proves nothing by itself; errors are for the fsync to
// report.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
