package providers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sweeper is implemented by stores in which a run killed mid-write leaves debris that is never
// visible as an object but costs space for good: temporary files (file://) and incomplete
// multipart uploads (s3://). GCS resumable uploads and Azure uncommitted blocks expire by
// themselves (a week), so those stores have nothing to sweep.
type Sweeper interface {
	// Sweep removes, below the store's prefix, Lifeboat's own debris that can no longer be
	// finished: temporary files of processes that are gone or untouched since before, and multipart
	// uploads initiated before before. What may still be another run's live write is left alone
	// and counted in Swept.Left.
	Sweep(ctx context.Context, before time.Time) (Swept, error)
}

// Swept is what a Sweep removed and left. JSON field names are stable.
type Swept struct {
	Removed int   `json:"removed"`
	Bytes   int64 `json:"bytes"` // bytes of the removed temporary files (0 for uploads: S3 does not say cheaply)
	Left    int   `json:"left"`  // debris that may belong to a run still going
}

// Sweep removes the file store's stale temporary files: .lifeboat-tmp-<pid>.<tag>-… files whose
// process no longer runs in this host's PID namespace (tag: ProcessTag), or that were last
// written before before. Linked directories are
// not entered, and removals go through the store's os.Root.
func (s *fileStore) Sweep(ctx context.Context, before time.Time) (Swept, error) {
	var sw Swept
	root, err := os.OpenRoot(s.root)
	if errors.Is(err, fs.ErrNotExist) {
		return sw, nil
	}
	if err != nil {
		return sw, s.fail("sweep", "", err)
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if de.IsDir() || !strings.HasPrefix(de.Name(), tmpPrefix) || !de.Type().IsRegular() {
			return nil
		}
		fi, err := de.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		if !fi.ModTime().Before(before) && tmpOwnerAlive(de.Name()) {
			sw.Left++
			return nil
		}
		if err := root.Remove(filepath.FromSlash(p)); err == nil {
			sw.Removed++
			sw.Bytes += fi.Size()
		}
		return nil
	})
	if err != nil {
		return sw, s.fail("sweep", "", err)
	}
	return sw, nil
}

// tmpOwnerAlive reports whether the process named in a temporary file's name may still be
// writing it: it is this process, a process with that id exists, or the file was made in
// another PID namespace or on another host sharing the directory (its pid means nothing here).
// Names it cannot parse (older versions wrote no tag) count as alive: only their age can
// condemn them.
func tmpOwnerAlive(name string) bool {
	owner, _, ok := strings.Cut(strings.TrimPrefix(name, tmpPrefix), "-")
	pidStr, tag, tagged := strings.Cut(owner, ".")
	pid, err := strconv.Atoi(pidStr)
	if !ok || !tagged || err != nil || pid <= 0 || tag != ProcessTag() {
		return true
	}
	if pid == os.Getpid() {
		return true
	}
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// ProcessTag names where this process's pids mean something: this host's boot and PID
// namespace (8 hex digits of their digest). Two containers sharing a volume have different tags.
func ProcessTag() string {
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(boot)) + "\x00" + ns + "\x00" + host))
	return hex.EncodeToString(sum[:4])
}

// AsSweeper returns the Sweeper of s or of a store it wraps (wrappers expose Unwrap() Store).
func AsSweeper(s Store) (Sweeper, bool) {
	for s != nil {
		if sw, ok := s.(Sweeper); ok {
			return sw, true
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return nil, false
		}
		s = u.Unwrap()
	}
	return nil, false
}
