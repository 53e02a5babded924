package providers

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"lifeboat/internal/base/wait"
	"lifeboat/providers/localfile"
)

// tmpPrefix marks the file store's temporary files; they are never listed, and keys whose last
// element starts with it are refused.
const tmpPrefix = ".lifeboat-tmp-"

// fileStore keeps objects as files under a root directory. It has no native checksums (local
// reads are fast enough to re-hash), so its Capabilities are empty and quick verification of a
// local copy reports UNVERIFIED. Writes go to a temporary file in the target directory, are fsynced
// and renamed into place; conditional writes and deletes are serialised by an flock on the root
// directory, so they are atomic across processes on one machine (not across NFS clients).
type fileStore struct {
	root  string
	opts  Options
	batch *pendingWrites // NewBatchFileStore: unconditional writes wait for Commit
}

// NewFileStore opens a directory as a store. The directory must exist.
func NewFileStore(root string, opts Options) (Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("file store %q: %w", root, err)
	}
	if opts.Private {
		if err := localfile.PrepareDir(abs, "state directory"); err != nil {
			return nil, fmt.Errorf("file store %s: %w", abs, err)
		}
	}
	return &fileStore{root: filepath.Clean(abs), opts: opts.WithoutSecrets()}, nil
}

func (s *fileStore) String() string {
	return (&url.URL{Scheme: "file", Path: s.root}).String()
}

func (s *fileStore) GoString() string { return "providers.Store(" + s.String() + ")" }
func (s *fileStore) Close() error     { return nil }

func (s *fileStore) Capabilities() Capabilities { return Capabilities{} }

func (s *fileStore) fail(op, key string, err error) error {
	kind, ok := ClassifyCommon(err)
	if !ok {
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			kind = ErrNotFound
		case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
			kind = ErrPermission
		case errors.Is(err, fs.ErrExist):
			kind = ErrPreconditionFailed
		}
	}
	return &Error{Op: op, Store: s.String(), Key: key, Kind: kind, Err: err}
}

func (s *fileStore) path(key string) string {
	return filepath.Join(s.root, filepath.FromSlash(key))
}

func checkKey(key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if strings.HasPrefix(key[strings.LastIndexByte(key, '/')+1:], tmpPrefix) {
		return fmt.Errorf("%w %q: names starting with %s are reserved", ErrInvalidKey, key, tmpPrefix)
	}
	return nil
}

// revision is the file's change token: a rename-based write always makes a new inode, an in-place
// change moves the mtime or size.
func revision(fi fs.FileInfo) string {
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%x-%x-%x", ino, fi.ModTime().UnixNano(), fi.Size())
}

func (s *fileStore) object(key string, fi fs.FileInfo) Object {
	rev := revision(fi)
	return Object{Key: key, Size: fi.Size(), ModTime: fi.ModTime(), ETag: rev, Revision: rev, Encryption: EncryptionUnknown}
}

// List walks the directory tree below dir. Symbolic links to files are followed (Hugging Face
// caches link snapshot files to blobs), and so is a root or dir that is itself a link; linked
// sub-directories are not (no loops, no escaping the tree).
func (s *fileStore) List(ctx context.Context, dir string, fn func(Object) error) error {
	fn = CapEntries(fn, s.opts.EffectiveMaxListEntries())
	dir, err := ValidateDir(dir)
	if err != nil {
		return &Error{Op: "list", Store: s.String(), Key: dir, Kind: ErrInvalidKey, Err: err}
	}
	if _, err := os.Stat(s.root); err != nil {
		return s.fail("list", "", err)
	}
	start := s.root
	if dir != "" {
		start = s.path(dir)
	}
	start, err = filepath.EvalSymlinks(start)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil // nothing below dir
	}
	if err != nil {
		return s.fail("list", dir, err)
	}
	var bad InvalidKeys
	err = filepath.WalkDir(start, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return &callerError{cerr}
		}
		if p == start && !de.IsDir() {
			return fs.SkipAll // dir names a file: nothing below it
		}
		if de.IsDir() || strings.HasPrefix(de.Name(), tmpPrefix) {
			return nil
		}
		rel, err := filepath.Rel(start, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if dir != "" {
			key = dir + "/" + key
		}
		if checkKey(key) != nil {
			bad.Add(key)
			return nil
		}
		stat := os.Stat
		if s.opts.Private {
			stat = os.Lstat
		}
		fi, err := stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted meanwhile, or a dangling link
			}
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		if err := fn(s.object(key, fi)); err != nil {
			return &callerError{err}
		}
		return nil
	})
	if err != nil {
		var ce *callerError
		if errors.As(err, &ce) {
			return ce.err // fn's error or the context's, unchanged
		}
		return s.fail("list", dir, err)
	}
	if err := bad.Result(); err != nil {
		return &Error{Op: "list", Store: s.String(), Key: dir, Err: err}
	}
	return nil
}

// callerError carries an error of the List callback (or the context) through WalkDir untouched.
type callerError struct{ err error }

func (e *callerError) Error() string { return e.err.Error() }

func (s *fileStore) Stat(ctx context.Context, key string) (Object, error) {
	if err := checkKey(key); err != nil {
		return Object{}, &Error{Op: "stat", Store: s.String(), Key: key, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return Object{}, &Error{Op: "stat", Store: s.String(), Key: key, Err: err}
	}
	stat := os.Stat
	if s.opts.Private {
		stat = os.Lstat // a link is not an object of a private store
	}
	fi, err := stat(s.path(key))
	if err != nil {
		return Object{}, s.fail("stat", key, err)
	}
	if !fi.Mode().IsRegular() {
		return Object{}, s.fail("stat", key, fs.ErrNotExist)
	}
	return s.object(key, fi), nil
}

func (s *fileStore) Read(ctx context.Context, key string, opts ReadOptions, fn func(io.Reader) error) error {
	if err := checkKey(key); err != nil {
		return &Error{Op: "read", Store: s.String(), Key: key, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return &Error{Op: "read", Store: s.String(), Key: key, Err: err}
	}
	if opts.Offset < 0 || opts.Length < 0 {
		return &Error{Op: "read", Store: s.String(), Key: key, Err: fmt.Errorf("negative range %d+%d", opts.Offset, opts.Length)}
	}
	flags := os.O_RDONLY
	if s.opts.Private {
		flags |= syscall.O_NOFOLLOW | syscall.O_NONBLOCK // a link or a FIFO is refused, never followed or waited on
	}
	f, err := os.OpenFile(s.path(key), flags, 0)
	if err != nil {
		return s.fail("read", key, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return s.fail("read", key, err)
	}
	if !fi.Mode().IsRegular() {
		return s.fail("read", key, fs.ErrNotExist)
	}
	if opts.IfMatch != "" && revision(fi) != opts.IfMatch {
		return &Error{Op: "read", Store: s.String(), Key: key, Kind: ErrPreconditionFailed, Err: errors.New("revision changed")}
	}
	n := fi.Size() - opts.Offset
	if n < 0 {
		n = 0
	}
	if opts.Length > 0 && opts.Length < n {
		n = opts.Length
	}
	r := io.NewSectionReader(f, opts.Offset, n)
	if err := fn(&exactReader{r: r, left: n}); err != nil {
		var ee *exactError
		if errors.As(err, &ee) {
			return s.fail("read", key, err)
		}
		return err
	}
	return nil
}

// exactReader turns a short read of a file that shrank underneath into io.ErrUnexpectedEOF.
type exactReader struct {
	r    io.Reader
	left int64
}

type exactError struct{}

func (exactError) Error() string { return "file shrank while being read" }
func (exactError) Unwrap() error { return io.ErrUnexpectedEOF }

func (e *exactReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		return n, &exactError{}
	}
	return n, err
}

func (s *fileStore) Write(ctx context.Context, key string, r io.Reader, opts WriteOptions) (Object, error) {
	if err := checkKey(key); err != nil {
		return Object{}, &Error{Op: "write", Store: s.String(), Key: key, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return Object{}, &Error{Op: "write", Store: s.String(), Key: key, Err: err}
	}
	if err := opts.Checksums.Validate(); err != nil {
		return Object{}, &Error{Op: "write", Store: s.String(), Key: key, Err: err}
	}
	// Every local write goes through an os.Root on the store's root: each path element is opened
	// beneath it (openat), so a directory in the tree that is a symbolic link leading out of it —
	// planted, or left by a careless copy — refuses the write instead of being followed.
	dirMode, fileMode := os.FileMode(0o755), os.FileMode(0o644)
	if s.opts.Private {
		dirMode, fileMode = 0o700, 0o600
	}
	if err := os.MkdirAll(s.root, dirMode); err != nil {
		return Object{}, s.fail("write", key, err)
	}
	root, err := os.OpenRoot(s.root)
	if err != nil {
		return Object{}, s.fail("write", key, err)
	}
	defer root.Close()
	final := filepath.FromSlash(key)
	dir := filepath.Dir(final)
	if err := root.MkdirAll(dir, dirMode); err != nil {
		return Object{}, s.contained("write", key, err)
	}
	tmpName, tmp, err := createTemp(root, dir, fileMode)
	if err != nil {
		return Object{}, s.contained("write", key, err)
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			root.Remove(tmpName)
		}
	}()
	d := NewDigester(opts.Checksums)
	n, err := copyOut(tmp, SourceReader{Ctx: ctx, R: r}, d)
	if err != nil {
		return Object{}, s.fail("write", key, err)
	}
	if err := d.Check(opts.Size); err != nil {
		return Object{}, &Error{Op: "write", Store: s.String(), Key: key, Err: err}
	}
	if s.batch != nil && !opts.IfNotExists && opts.IfMatch == "" {
		// Checked; synced, renamed and its directory synced by Commit, with the batch's others.
		if err := tmp.Close(); err != nil {
			return Object{}, s.fail("write", key, err)
		}
		s.batch.add(root, key, pendingWrite{tmp: tmpName, final: final})
		committed = true
		return Object{Key: key, Size: n, Encryption: EncryptionUnknown}, nil
	}
	if err := tmp.Sync(); err != nil {
		return Object{}, s.fail("write", key, err)
	}
	if err := tmp.Close(); err != nil {
		return Object{}, s.fail("write", key, err)
	}

	unlock, err := s.lock(ctx)
	if err != nil {
		return Object{}, s.fail("write", key, err)
	}
	defer unlock()
	switch {
	case opts.IfNotExists:
		if err := root.Link(tmpName, final); err != nil {
			return Object{}, s.contained("write", key, err)
		}
		root.Remove(tmpName)
	case opts.IfMatch != "":
		fi, err := root.Stat(final)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && revision(fi) != opts.IfMatch) {
			return Object{}, &Error{Op: "write", Store: s.String(), Key: key, Kind: ErrPreconditionFailed, Err: errors.New("revision changed")}
		}
		if err != nil {
			return Object{}, s.contained("write", key, err)
		}
		fallthrough
	default:
		if err := root.Rename(tmpName, final); err != nil {
			return Object{}, s.contained("write", key, err)
		}
	}
	committed = true
	if f, err := root.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
	fi, err := root.Stat(final)
	if err != nil {
		return Object{}, s.contained("write", key, err)
	}
	return s.object(key, fi), nil
}

// ErrOutsideRoot: a local write would land outside the file store's root (a directory on the
// way is a symbolic link that leads out of it).
var ErrOutsideRoot = errors.New("outside the store's root")

// contained is fail for an os.Root operation: an escape is ErrOutsideRoot (refused, with
// permission's kind: never retried).
func (s *fileStore) contained(op, key string, err error) error {
	// os.Root reports an escape as an unexported "path escapes from parent" error.
	if err != nil && strings.Contains(err.Error(), "escapes from parent") {
		return &Error{Op: op, Store: s.String(), Key: key, Kind: ErrPermission, Err: fmt.Errorf("%w: %v", ErrOutsideRoot, err)}
	}
	return s.fail(op, key, err)
}

// createTemp creates a new temporary file in dir beneath root, named tmpPrefix + this process's
// id and ProcessTag + a random suffix (so a later run in the same PID namespace can tell a dead
// process's leftovers from a live one's),
// mode 0644: a replica is read by other users too (a vLLM container running as its own uid).
func createTemp(root *os.Root, dir string, mode os.FileMode) (string, *os.File, error) {
	tag := ProcessTag()
	for range 100 {
		var b [6]byte
		rand.Read(b[:])
		name := filepath.Join(dir, fmt.Sprintf("%s%d.%s-%x", tmpPrefix, os.Getpid(), tag, b))
		f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		// The umask may have narrowed the mode.
		if err := f.Chmod(mode); err != nil {
			f.Close()
			root.Remove(name)
			return "", nil, err
		}
		return name, f, nil
	}
	return "", nil, errors.New("could not create a temporary file")
}

func (s *fileStore) Delete(ctx context.Context, key string, opts DeleteOptions) error {
	if err := checkKey(key); err != nil {
		return &Error{Op: "delete", Store: s.String(), Key: key, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return &Error{Op: "delete", Store: s.String(), Key: key, Err: err}
	}
	unlock, err := s.lock(ctx)
	if errors.Is(err, fs.ErrNotExist) && opts.IfMatch == "" {
		return nil
	}
	if err != nil {
		return s.fail("delete", key, err)
	}
	defer unlock()
	root, err := os.OpenRoot(s.root)
	if err != nil {
		return s.fail("delete", key, err)
	}
	defer root.Close()
	p := filepath.FromSlash(key)
	if opts.IfMatch != "" {
		fi, err := root.Stat(p)
		if err != nil {
			return s.contained("delete", key, err)
		}
		if revision(fi) != opts.IfMatch {
			return &Error{Op: "delete", Store: s.String(), Key: key, Kind: ErrPreconditionFailed, Err: errors.New("revision changed")}
		}
	}
	if err := root.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) && opts.IfMatch == "" {
			return nil
		}
		return s.contained("delete", key, err)
	}
	if f, err := root.Open(filepath.Dir(p)); err == nil {
		f.Sync()
		f.Close()
	}
	return nil
}

// fileLockWait bounds the wait for the root's flock. Its holders keep it only around a rename
// or a remove, so a longer wait means a holder that cannot run (stopped with SIGSTOP, hung in
// the kernel): the caller gets an error instead of waiting for it for good.
const fileLockWait = 30 * time.Second

// lock takes an exclusive flock on the root directory, waiting at most fileLockWait (and never
// past ctx).
func (s *fileStore) lock(ctx context.Context) (func(), error) {
	f, err := os.Open(s.root)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(fileLockWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, err
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%w: another process has held the lock of %s for over %s (a stopped or hung process?)", ErrUnreachable, s.root, fileLockWait)
		}
		if err := wait.Sleep(ctx, pause); err != nil {
			f.Close()
			return nil, err
		}
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
}
