package providers

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// writeback hands a file's bytes to the disk as they are written, from a goroutine of its own
// (sync_file_range SYNC_FILE_RANGE_WRITE: start writing, do not wait), so that the fsync after
// the last byte finds most of them on disk already, and the copy never waits on the disk (the
// call blocks while the device's queue is full). It proves nothing by itself; errors are the
// fsync's to report.
type writeback struct {
	fd   int
	mu   sync.Mutex
	upTo int64
	kick chan struct{}
	done chan struct{}
}

func startWriteback(f *os.File) *writeback {
	w := &writeback{fd: int(f.Fd()), kick: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var from int64
		for range w.kick {
			w.mu.Lock()
			to := w.upTo
			w.mu.Unlock()
			if to > from {
				_ = unix.SyncFileRange(w.fd, from, to-from, unix.SYNC_FILE_RANGE_WRITE)
				from = to
			}
		}
	}()
	return w
}

// advance says the file's first n bytes are written.
func (w *writeback) advance(n int64) {
	w.mu.Lock()
	w.upTo = n
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default: // a kick is pending: it will take n too
	}
}

// stop waits for the goroutine; the file may be closed after.
func (w *writeback) stop() {
	close(w.kick)
	<-w.done
}
