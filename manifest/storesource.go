package manifest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"lifeboat/internal/base/wait"
	"lifeboat/manifest/modelrepo"
	"lifeboat/providers"
	"lifeboat/providers/localfile"
)

// A model repository or a DR bundle can live in any providers.Store (file://, s3://, gs://, az://)
// as well as in a local directory. This file holds what reads them from a store:
//
//   - Build, with BuildOptions.ModelStore set, lists the store once, applies the local walker's
//     rules (tool metadata skipped, unsafe names refused) and streams each object once through
//     HashReader, objects in parallel, memory constant whatever their size;
//   - StoreSource serves files to the lint (it implements lint.Source and lint.Lister) by ranged
//     reads, so a safetensors header costs two small GETs, not a download of the shard.

// StoreLayout says how bundle paths map onto the keys of a store.
type StoreLayout int

const (
	// ModelRepoLayout: the store's prefix is the model repository; bundle path model/x is key x,
	// and engine/ and deploy/ files are not in it (the lint reads them from the manifest).
	ModelRepoLayout StoreLayout = iota
	// BundleLayout: the store's prefix is a DR bundle (a replica): keys are the bundle paths,
	// model/…, engine/… and deploy/….
	BundleLayout
)

// StoreSource reads bundle files from a store. It lists the store once, on first use, and answers
// sizes from that listing; reads are ranged reads of exactly the bytes asked for. Safe for
// concurrent use.
type StoreSource struct {
	store  providers.Store
	layout StoreLayout

	once    sync.Once
	objs    map[string]providers.Object // by bundle path
	listErr error                       // the listing failed (objs is then what it saw before)
}

// NewStoreSource returns a source over store with the given layout.
func NewStoreSource(store providers.Store, layout StoreLayout) *StoreSource {
	return &StoreSource{store: store, layout: layout}
}

// String is the store's URL.
func (s *StoreSource) String() string { return s.store.String() }

// key maps a bundle path to a store key; ok is false for paths the layout does not hold.
func (s *StoreSource) key(p string) (string, bool) {
	if s.layout == BundleLayout {
		return p, true
	}
	rel, ok := strings.CutPrefix(p, "model/")
	return rel, ok && rel != ""
}

// bundlePath maps a store key to a bundle path; ok is false for keys outside the bundle.
func (s *StoreSource) bundlePath(key string) (string, bool) {
	if s.layout == BundleLayout {
		part, err := splitBundlePath(key)
		return key, err == nil && part != ""
	}
	return "model/" + key, true
}

// Prefetch lists the store now. Callers use it to tell an unreachable or missing store (an error
// wrapping providers.ErrUnreachable, ErrNotFound or ErrPermission) from a store that merely lacks
// some files. Keys that are not valid keys are reported by the error (an
// *providers.InvalidKeysError) while every valid one is still served.
func (s *StoreSource) Prefetch(ctx context.Context) error {
	s.once.Do(func() {
		objs := map[string]providers.Object{}
		if s.layout == BundleLayout {
			// Only the bundle's three parts: a replica prefix may hold other things (the manifest).
			for _, d := range []string{"model", "engine", "deploy"} {
				if err := s.store.List(ctx, d, func(o providers.Object) error {
					if p, ok := s.bundlePath(o.Key); ok {
						objs[p] = o
					}
					return nil
				}); err != nil && s.listErr == nil {
					s.listErr = err
				}
			}
		} else {
			s.listErr = s.store.List(ctx, "", func(o providers.Object) error {
				p, _ := s.bundlePath(o.Key)
				objs[p] = o
				return nil
			})
		}
		s.objs = objs
	})
	return s.listErr
}

// Object returns the listing entry of a bundle path.
func (s *StoreSource) Object(ctx context.Context, p string) (providers.Object, error) {
	if err := s.Prefetch(ctx); err != nil && !errors.Is(err, providers.ErrInvalidKey) {
		return providers.Object{}, err
	}
	o, ok := s.objs[p]
	if !ok {
		return providers.Object{}, fmt.Errorf("%s: not in %s: %w", p, s.store, fs.ErrNotExist)
	}
	return o, nil
}

// Size implements lint.Source. A file the store lacks is an error wrapping fs.ErrNotExist.
func (s *StoreSource) Size(ctx context.Context, p string) (int64, error) {
	o, err := s.Object(ctx, p)
	if err != nil {
		return 0, err
	}
	return o.Size, nil
}

// ReadAt implements lint.Source: one ranged read of exactly the bytes asked for (cut at the end of
// the object, with io.EOF, like io.ReaderAt).
func (s *StoreSource) ReadAt(ctx context.Context, p string, b []byte, off int64) (int, error) {
	o, err := s.Object(ctx, p)
	if err != nil {
		return 0, err
	}
	key, _ := s.key(p)
	return readAt(ctx, s.store, key, o.Size, b, off)
}

// List implements lint.Lister: the bundle paths of the model files the store holds, sorted, with
// tool metadata (.git/, .cache/ at the model root) left out as the local walker does. Unsafe keys
// are not listed; the error names them.
func (s *StoreSource) List(ctx context.Context) ([]string, error) {
	err := s.Prefetch(ctx)
	if err != nil && !errors.Is(err, providers.ErrInvalidKey) {
		return nil, err
	}
	var out []string
	for p := range s.objs {
		rel, ok := strings.CutPrefix(p, "model/")
		if !ok || skippedRel(rel) {
			continue
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return out, err
}

// skippedRel reports whether a model-relative path is tool metadata the walker skips.
func skippedRel(rel string) bool {
	first, _, found := strings.Cut(rel, "/")
	return found && skipDirs[first]
}

// readAt reads len(b) bytes of key at off (fewer, with io.EOF, at the end of an object of the
// given size) with one ranged read. Read may call its callback again after a broken connection,
// so the buffer is refilled from the start each time.
func readAt(ctx context.Context, st providers.Store, key string, size int64, b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset %d", key, off)
	}
	want := int64(len(b))
	if off >= size {
		return 0, io.EOF
	}
	if off+want > size {
		want = size - off
	}
	if want == 0 {
		return 0, nil
	}
	var n int
	err := st.Read(ctx, key, providers.ReadOptions{Offset: off, Length: want}, func(r io.Reader) error {
		var err error
		n, err = io.ReadFull(r, b[:want])
		return err
	})
	if err != nil {
		return n, err
	}
	if want < int64(len(b)) {
		return n, io.EOF
	}
	return n, nil
}

// storeReaderAt is an io.ReaderAt over one object.
type storeReaderAt struct {
	ctx   context.Context
	store providers.Store
	key   string
	size  int64
}

func (r storeReaderAt) ReadAt(b []byte, off int64) (int, error) {
	return readAt(r.ctx, r.store, r.key, r.size, b, off)
}

// walkStore lists the model repository in a store, the way WalkDir lists a local one: sorted by
// path, .git/ and .cache/ at the root skipped. Keys that are not safe relative paths make it fail,
// naming them, as an unsafe local name does: a manifest must not silently leave files out.
func walkStore(ctx context.Context, st providers.Store) ([]LocalFile, error) {
	var out []LocalFile
	err := st.List(ctx, "", func(o providers.Object) error {
		if skippedRel(o.Key) {
			return nil
		}
		if err := checkRelPath(o.Key); err != nil {
			return fmt.Errorf("%s: %v", st, err)
		}
		out = append(out, LocalFile{Rel: o.Key, Abs: o.Key, Size: o.Size})
		return nil
	})
	if err != nil {
		var ik *providers.InvalidKeysError
		if errors.As(err, &ik) {
			return nil, fmt.Errorf("model repository %s holds %d object name(s) that are not safe relative paths, e.g. %q; rename them or point --model at a clean prefix", st, ik.Count, ik.Examples)
		}
		return nil, fmt.Errorf("model repository %s: %w", st, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out, nil
}

// hashObject streams one object of the model store through HashReader. Read may call the callback
// again from the start after a broken connection: the hashers then start over, and the bytes
// already reported to progress are taken back. A read that still breaks (a reset or truncated
// body, a store failing after its SDK's retries) is tried again, hashObjectAttempts times in all.
// An object the manifest embeds (a small model config) is read whole, its bytes kept.
func hashObject(ctx context.Context, s source, embedded bool, progress func(int64)) (File, error) {
	f := File{Path: s.bundle, Part: s.part, Role: s.role, MediaType: s.role.MediaType()}
	var sums Checksums
	var n int64
	var data []byte
	var err error
	pause := hashObjectBackoff
	for attempt := 1; ; attempt++ {
		err = s.store.Read(ctx, s.abs, providers.ReadOptions{}, func(r io.Reader) error {
			if embedded { // a small config: kept whole, as the local build keeps it
				var err error
				data, err = io.ReadAll(io.LimitReader(cutShort{r}, s.size+1))
				n = int64(len(data))
				return err
			}
			var seen int64
			p := func(k int64) {
				seen += k
				if progress != nil {
					progress(k)
				}
			}
			var err error
			sums, n, err = HashReader(ctx, cutShort{r}, p)
			if err != nil && progress != nil {
				progress(-seen) // a retried attempt starts from zero
			}
			return err
		})
		if err == nil || attempt == hashObjectAttempts || ctx.Err() != nil || !errors.Is(err, providers.ErrUnreachable) {
			break
		}
		_ = wait.Sleep(ctx, pause) // as before: cancelled, the next attempt fails fast and ends the loop
		pause *= 2
	}
	if err != nil {
		return File{}, fmt.Errorf("hash %s: %w", s.bundle, err)
	}
	if n != s.size {
		return File{}, fmt.Errorf("hash %s: read %d bytes, the listing says %d (the object changed, or its body was cut short)", s.bundle, n, s.size)
	}
	if embedded {
		embed(&f, data)
		if progress != nil {
			progress(f.Size)
		}
		return f, nil
	}
	f.Size, f.Sums, f.Digest = n, sums, digestOf(sums.SHA256)
	return f, nil
}

// Reads of one object that break are tried this many times, waiting hashObjectBackoff (doubling)
// in between.
const (
	hashObjectAttempts = 3
	hashObjectBackoff  = 200 * time.Millisecond
)

// cutShort keeps a truncated body from looking like a clean end: stores report one as
// io.ErrUnexpectedEOF, which HashReader (built on io.ReadFull) would otherwise take for the end of
// the content.
type cutShort struct{ r io.Reader }

func (c cutShort) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF && errors.Is(err, io.ErrUnexpectedEOF) {
		err = errBodyCutShort
	}
	return n, err
}

// errBodyCutShort is a body that ended before its length; it counts as the store being
// unreachable (the connection broke), so callers retry or report it unreachable.
var errBodyCutShort = bodyCutShortError{}

type bodyCutShortError struct{}

func (bodyCutShortError) Error() string        { return "response body cut short" }
func (bodyCutShortError) Is(target error) bool { return target == providers.ErrUnreachable }

// readFile returns the whole content of a source file.
func (s source) readFile(ctx context.Context) ([]byte, error) {
	if s.store == nil {
		return localfile.ReadFile(s.abs, 64<<20)
	}
	if s.size > 64<<20 {
		return nil, fmt.Errorf("%s: %d bytes is too large to read whole", s.bundle, s.size)
	}
	buf := make([]byte, s.size)
	n, err := readAt(ctx, s.store, s.abs, s.size, buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// safetensorsHeader reads the header of a safetensors source file (only the header bytes).
func (s source) safetensorsHeader(ctx context.Context) (*modelrepo.SafetensorsHeader, error) {
	if s.store != nil {
		return modelrepo.ReadSafetensorsHeader(storeReaderAt{ctx: ctx, store: s.store, key: s.abs, size: s.size}, s.size)
	}
	f, _, err := localfile.Open(s.abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return modelrepo.ReadSafetensorsHeader(f, s.size)
}

// origin names where a source file comes from, for messages.
func (s source) origin() string {
	if s.store == nil {
		return s.abs
	}
	return strings.TrimSuffix(s.store.String(), "/") + "/" + path.Clean(s.abs)
}
