package providers

import (
	"context"
	"errors"
	"os"
	"sort"
	"strings"
)

// ErrNoDirs: the store cannot list its top-level directories (a wrapper that does not unwrap).
var ErrNoDirs = errors.New("the store cannot list directories")

// dirLister is what every provider's store can do besides Store: name the "directories" at the
// top of its prefix (S3 and GCS common prefixes, Azure blob prefixes, local subdirectories).
type dirLister interface {
	ListDirs(ctx context.Context, max int) ([]string, error)
}

// ListDirs returns the names of the directories at the top of s — the next path element of every
// key, as a listing with delimiter "/" gives them — sorted, at most max (one page; the rest is
// not fetched). It is for suggestions ("prefixes nearby: …"), so it costs one request, not a
// walk of the store. Wrappers are seen through with Unwrap.
func ListDirs(ctx context.Context, s Store, max int) ([]string, error) {
	if max <= 0 {
		max = 1000
	}
	for {
		if d, ok := s.(dirLister); ok {
			names, err := d.ListDirs(ctx, max)
			sort.Strings(names)
			return names, err
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return nil, ErrNoDirs
		}
		s = u.Unwrap()
	}
}

// dirName is a listed common prefix relative to the store's prefix, without its trailing "/".
func (k Keyspace) DirName(common string) (string, bool) {
	name, ok := strings.CutPrefix(common, k.Prefix)
	name = strings.TrimSuffix(name, "/")
	return name, ok && name != "" && ValidatePath(name) == nil
}

func (s *fileStore) ListDirs(ctx context.Context, max int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(s.root)
	if err != nil {
		return nil, s.fail("list", "", err)
	}
	defer f.Close()
	entries, err := f.ReadDir(max)
	if err != nil && len(entries) == 0 {
		return nil, nil // empty directory (io.EOF) or unreadable: nothing to suggest
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && ValidatePath(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	return names, nil
}
