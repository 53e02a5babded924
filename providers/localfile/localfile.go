// Package localfile reads local input files — manifests, fleet files, model configs, tokenizers —
// the one way every reader of a file Lifeboat did not write must: only regular files (a FIFO
// would block the open and ignore signals, /dev/zero never ends), and never more than a limit
// named by the caller (a hostile or mistaken file cannot take the machine's memory).
package localfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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
