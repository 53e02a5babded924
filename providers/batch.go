package providers

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// Committer is a store whose writes are made durable in one batch: each Write leaves its checked
// bytes in a temporary file, neither synced nor under its final name yet, and Commit syncs them
// all, renames each into place, then syncs each directory once. Until Commit, a written key reads
// as it was before the Write; a crash before Commit leaves temporary files (swept on the next
// run), never a partial file under a final name.
type Committer interface {
	// Commit makes every pending write durable and visible, and reports each key whose commit
	// failed (nothing of it is under its final name then). It runs to the end whatever ctx says:
	// the bytes are already written and checked, and committing them is what lets an interrupted
	// run resume.
	Commit(ctx context.Context) map[string]error
}

// AsCommitter finds a Committer in s or the stores it wraps.
func AsCommitter(s Store) (Committer, bool) {
	for s != nil {
		if c, ok := s.(Committer); ok {
			return c, true
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return nil, false
		}
		s = u.Unwrap()
	}
	return nil, false
}

// NewBatchFileStore is NewFileStore whose unconditional writes are committed together by
// Commit (see Committer); conditional writes (IfNotExists, IfMatch) still commit at once.
// Restore writes a bundle with it: one fsync per file, but all of them after the last byte
// arrived instead of each copy waiting for its own before the next starts, and one per
// directory instead of one per file.
func NewBatchFileStore(root string, opts Options) (Store, error) {
	s, err := NewFileStore(root, opts)
	if err != nil {
		return nil, err
	}
	fs := s.(*fileStore)
	fs.batch = &pendingWrites{}
	return fs, nil
}

// pendingWrites are a batch file store's checked, closed, not yet committed temporary files.
type pendingWrites struct {
	mu    sync.Mutex
	files map[string]pendingWrite // by key
}

type pendingWrite struct {
	tmp   string // relative to the root
	final string // relative to the root
}

// add records a temporary file as key's pending content; a pending file it replaces is removed.
func (p *pendingWrites) add(root *os.Root, key string, w pendingWrite) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.files == nil {
		p.files = map[string]pendingWrite{}
	}
	if old, ok := p.files[key]; ok {
		root.Remove(old.tmp)
	}
	p.files[key] = w
}

// commitSyncs bounds the fsyncs a Commit runs at once.
const commitSyncs = 8

func (s *fileStore) Commit(ctx context.Context) map[string]error {
	if s.batch == nil {
		return nil
	}
	s.batch.mu.Lock()
	files := s.batch.files
	s.batch.files = nil
	s.batch.mu.Unlock()
	if len(files) == 0 {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	failed := map[string]error{}
	root, err := os.OpenRoot(s.root)
	if err != nil {
		for key := range files {
			failed[key] = s.fail("write", key, err)
		}
		return failed
	}
	defer root.Close()
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// 1. Every temporary file's bytes to disk, several at once (the file system joins their
	// journal commits).
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, commitSyncs)
	for _, key := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := syncFile(root, files[key].tmp); err != nil {
				mu.Lock()
				failed[key] = s.fail("write", key, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// 2. Each synced file renamed into place, under the root's lock as every write is.
	unlock, err := s.lock(ctx)
	if err != nil {
		for _, key := range keys {
			if failed[key] == nil {
				failed[key] = s.fail("write", key, err)
			}
		}
	}
	dirs := map[string]bool{}
	for _, key := range keys {
		w := files[key]
		if failed[key] != nil {
			root.Remove(w.tmp)
			continue
		}
		if err := root.Rename(w.tmp, w.final); err != nil {
			failed[key] = s.contained("write", key, err)
			root.Remove(w.tmp)
			continue
		}
		dirs[filepath.Dir(w.final)] = true
	}
	if unlock != nil {
		unlock()
	}
	// 3. Each directory that got a file, once: the renames themselves made durable.
	for dir := range dirs {
		if f, err := root.Open(dir); err == nil {
			f.Sync()
			f.Close()
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return failed
}

// syncFile fsyncs the file name beneath root.
func syncFile(root *os.Root, name string) error {
	f, err := root.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyBufs are the file store's copy buffers: a write reads, hashes and writes 1 MiB at a time,
// with no buffer allocated per write.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// writebackEvery is how many bytes a file store write lets pile up before it hands them to the
// disk's writeback (Linux: see writeback), so that the fsync at the end has little left to wait
// for: a restore's files otherwise stay in the page cache until that fsync writes them all.
const writebackEvery = 8 << 20

// copyOut copies r into f through the digester d, and returns the bytes copied.
func copyOut(f *os.File, r io.Reader, d io.Writer) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	wb := startWriteback(f)
	defer wb.stop()
	var n, kicked int64
	for {
		k, rerr := r.Read(buf)
		if k > 0 {
			d.Write(buf[:k])
			if _, err := f.Write(buf[:k]); err != nil {
				return n, err
			}
			n += int64(k)
			if n-kicked >= writebackEvery {
				wb.advance(n)
				kicked = n
			}
		}
		if errors.Is(rerr, io.EOF) {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}
