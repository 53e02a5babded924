package providertest

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"lifeboat/providers"
	"lifeboat/providers/checksum"

	"github.com/minio/crc64nvme"
)

// Option adds optional parts of the suite.
type Option func(*config)

type config struct {
	denied    func(t *testing.T) providers.Store
	sub       func(t *testing.T, s providers.Store, sub string) providers.Store
	plant     func(t *testing.T, s providers.Store, rawKey string, data []byte) error
	largeSize int64
	many      int
}

// WithDenied gives a store the service refuses (wrong credentials, no access): every call on it
// must fail with ErrPermission, never ErrNotFound.
func WithDenied(f func(t *testing.T) providers.Store) Option {
	return func(c *config) { c.denied = f }
}

// WithSub gives a second view of s's location one prefix level down (prefix + "/" + sub), to check
// that prefixes isolate and nest.
func WithSub(f func(t *testing.T, s providers.Store, sub string) providers.Store) Option {
	return func(c *config) { c.sub = f }
}

// WithPlant writes an object under a raw name relative to s's prefix, bypassing key validation, to
// check that hostile names in a listing are reported, not passed on. It returns an error if the
// service cannot hold that name (the case is then skipped for it).
func WithPlant(f func(t *testing.T, s providers.Store, rawKey string, data []byte) error) Option {
	return func(c *config) { c.plant = f }
}

// WithLargeSize sets the size of the multipart objects (default 24 MiB).
func WithLargeSize(n int64) Option { return func(c *config) { c.largeSize = n } }

// WithMany sets how many objects the pagination case lists (default 1,050).
func WithMany(n int) Option { return func(c *config) { c.many = n } }

// Run runs the suite. newStore must return a store over a fresh, empty prefix, configured with a
// small Options.PageSize (at most 100) and PartSize (5 MiB) so that listings cross pages and large
// objects go up in several parts. Cases run in parallel, each on its own store.
func Run(t *testing.T, newStore func(t *testing.T) providers.Store, opts ...Option) {
	c := &config{largeSize: 24 << 20, many: 1050}
	for _, o := range opts {
		o(c)
	}
	cas, lst := providers.CapCompareAndSwap, providers.CapPrefixListing
	cases := []struct {
		name string
		fn   func(*testing.T, *config, func(*testing.T) providers.Store)
		// needs are the capabilities (providers.Cap…) the case tests: a store that reports one
		// of them in Capabilities().Lacks skips the case, with the store's reason.
		needs []string
	}{
		{"EmptyAndMissing", testEmptyAndMissing, nil},
		{"RoundTripChecksums", testRoundTrip, nil},
		{"EmptyObject", testEmptyObject, nil},
		{"KeysWithSpacesAndUnicode", testUnicodeKeys, nil},
		{"InvalidKeysRejected", testInvalidKeys, nil},
		{"ListManyPaginated", testListMany, []string{lst}},
		{"ListNestedDirs", testListNested, []string{lst}},
		{"RangedReads", testRangedReads, nil},
		{"LargeMultipart", testLargeMultipart, nil},
		{"LargeUnknownSize", testLargeUnknownSize, nil},
		{"ContentMismatchCommitsNothing", testContentMismatch, nil},
		{"CancelledWriteCommitsNothing", testCancelledWrite, nil},
		{"Overwrite", testOverwrite, nil},
		{"ConditionalCreateRace", testCreateRace, []string{cas}},
		{"ConditionalCreateMultipart", testCreateMultipart, []string{cas}},
		{"CompareAndSwap", testCAS, []string{cas}},
		{"CompareAndSwapRace", testCASRace, []string{cas}},
		{"ConditionalDelete", testConditionalDelete, []string{cas}},
		{"ConditionalWriteRefused", testConditionalRefused, nil},
		{"PermissionDenied", testDenied, nil},
		{"Prefixes", testPrefixes, []string{lst}},
		{"HostileListingKeys", testHostileKeys, []string{lst}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if len(tc.needs) > 0 {
				s := newStore(t)
				for _, l := range s.Capabilities().Lacks {
					if slices.Contains(tc.needs, l.Capability) {
						t.Skipf("%s lacks %s: %s", s, l.Capability, l.Why)
					}
				}
			}
			tc.fn(t, c, newStore)
		})
	}
}

// A store that lacks compare-and-swap refuses every conditional write and delete with
// ErrUnsupported, and commits nothing: a caller that needed the condition must not believe it
// held. (A store that has it is tested by the cases above.)
func testConditionalRefused(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	if !slices.ContainsFunc(s.Capabilities().Lacks, func(l providers.Lack) bool { return l.Capability == providers.CapCompareAndSwap }) {
		t.Skip("the store has compare-and-swap")
	}
	ctx := ctxT(t)
	w := put(t, s, "lock", []byte("mine"), providers.WriteOptions{})
	_, err := s.Write(ctx, "locks/new", strings.NewReader("x"), providers.WriteOptions{IfNotExists: true})
	wantErr(t, err, providers.ErrUnsupported, "create-if-absent")
	_, err = s.Stat(ctx, "locks/new")
	wantErr(t, err, providers.ErrNotFound, "stat after a refused create")
	_, err = s.Write(ctx, "lock", strings.NewReader("theirs"), providers.WriteOptions{IfMatch: w.Revision})
	wantErr(t, err, providers.ErrUnsupported, "compare-and-swap")
	err = s.Delete(ctx, "lock", providers.DeleteOptions{IfMatch: w.Revision})
	wantErr(t, err, providers.ErrUnsupported, "conditional delete")
	if got := get(t, s, "lock", providers.ReadOptions{}); string(got) != "mine" {
		t.Fatalf("a refused conditional write changed the object: %q", got)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// gen returns n deterministic pseudo-random bytes for seed, streamed (constant memory).
func gen(seed uint64, n int64) io.Reader {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	return io.LimitReader(rand.NewChaCha8(s), n)
}

// Sums computes every checksum the manifest records, in its encodings.
func Sums(r io.Reader) (providers.Checksums, int64) {
	s2, m5 := sha256.New(), md5.New()
	c32c, c32, c64 := crc32.New(checksum.Castagnoli), crc32.NewIEEE(), crc64nvme.New()
	n, err := io.Copy(io.MultiWriter(s2, m5, c32c, c32, c64), r)
	if err != nil {
		panic(err)
	}
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	return providers.Checksums{
		SHA256: hex.EncodeToString(s2.Sum(nil)), MD5: b64(m5.Sum(nil)),
		CRC32C: b64(c32c.Sum(nil)), CRC32: b64(c32.Sum(nil)), CRC64NVME: b64(c64.Sum(nil)),
	}, n
}

func sumsOf(b []byte) providers.Checksums { s, _ := Sums(bytes.NewReader(b)); return s }

func put(t *testing.T, s providers.Store, key string, data []byte, o providers.WriteOptions) providers.Object {
	t.Helper()
	if o.Size == 0 {
		o.Size = int64(len(data))
	}
	obj, err := s.Write(ctxT(t), key, bytes.NewReader(data), o)
	if err != nil {
		t.Fatalf("write %q: %v", key, err)
	}
	return obj
}

func get(t *testing.T, s providers.Store, key string, o providers.ReadOptions) []byte {
	t.Helper()
	b, err := read(ctxT(t), s, key, o)
	if err != nil {
		t.Fatalf("read %q %+v: %v", key, o, err)
	}
	return b
}

func read(ctx context.Context, s providers.Store, key string, o providers.ReadOptions) ([]byte, error) {
	var buf bytes.Buffer
	err := s.Read(ctx, key, o, func(r io.Reader) error {
		buf.Reset() // the callback must be idempotent
		_, err := io.Copy(&buf, r)
		return err
	})
	return buf.Bytes(), err
}

func list(t *testing.T, s providers.Store, dir string) map[string]providers.Object {
	t.Helper()
	out := map[string]providers.Object{}
	err := s.List(ctxT(t), dir, func(o providers.Object) error {
		if _, dup := out[o.Key]; dup {
			return fmt.Errorf("key %q listed twice", o.Key)
		}
		out[o.Key] = o
		return nil
	})
	if err != nil {
		t.Fatalf("list %q: %v", dir, err)
	}
	return out
}

func keys(m map[string]providers.Object) []string { return slices.Sorted(maps.Keys(m)) }

func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// checkNative asserts that obj reports, for each algorithm, a full-object value equal to want's,
// and never a wrong full-object value for any other algorithm.
func checkNative(t *testing.T, what string, obj providers.Object, want providers.Checksums, required []providers.Algorithm) {
	t.Helper()
	for _, alg := range required {
		c, ok := obj.Checksum(alg)
		if !ok {
			t.Errorf("%s: no full-object %s reported; got %+v", what, alg, obj.Checksums)
			continue
		}
		if c.Value != want.Get(alg) {
			t.Errorf("%s: %s = %s, want %s", what, alg, c.Value, want.Get(alg))
		}
	}
	for _, c := range obj.Checksums {
		if exp := want.Get(c.Algorithm); !c.Composite && exp != "" && c.Value != exp {
			t.Errorf("%s: reports %s = %s (fromETag=%v), content has %s", what, c.Algorithm, c.Value, c.FromETag, exp)
		}
	}
}

func testEmptyAndMissing(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	ctx := ctxT(t)
	if got := list(t, s, ""); len(got) != 0 {
		t.Fatalf("fresh store lists %v", keys(got))
	}
	_, err := s.Stat(ctx, "missing/object.bin")
	wantErr(t, err, providers.ErrNotFound, "stat missing")
	_, err = read(ctx, s, "missing/object.bin", providers.ReadOptions{})
	wantErr(t, err, providers.ErrNotFound, "read missing")
	_, err = read(ctx, s, "missing/object.bin", providers.ReadOptions{Offset: 10, Length: 5})
	wantErr(t, err, providers.ErrNotFound, "ranged read missing")
	if errors.Is(err, providers.ErrPermission) || errors.Is(err, providers.ErrUnreachable) {
		t.Fatalf("not-found must not look like %v", err)
	}
	if err := s.Delete(ctx, "missing/object.bin", providers.DeleteOptions{}); err != nil {
		t.Fatalf("delete missing: %v", err)
	}
	if s.String() == "" {
		t.Fatal("String() is empty")
	}
}

func testRoundTrip(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	ctx := ctxT(t)
	data := []byte("tokenizer.json contents, small enough for one request\n")
	want := sumsOf(data)
	caps := s.Capabilities()
	w := put(t, s, "model/tokenizer.json", data, providers.WriteOptions{Checksums: want})
	if w.Key != "model/tokenizer.json" || w.Size != int64(len(data)) || w.Revision == "" {
		t.Fatalf("write returned %+v", w)
	}
	checkNative(t, "write result", w, want, caps.WriteChecksums)
	st, err := s.Stat(ctx, "model/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	if st.Size != int64(len(data)) || st.Revision != w.Revision || st.Key != w.Key {
		t.Fatalf("stat %+v, write %+v", st, w)
	}
	checkNative(t, "stat", st, want, caps.WriteChecksums)
	if got := get(t, s, "model/tokenizer.json", providers.ReadOptions{}); !bytes.Equal(got, data) {
		t.Fatalf("read back %q", got)
	}
	l := list(t, s, "")
	e, ok := l["model/tokenizer.json"]
	if !ok || len(l) != 1 {
		t.Fatalf("list: %v", keys(l))
	}
	if e.Size != int64(len(data)) {
		t.Fatalf("listed size %d", e.Size)
	}
	// A single-request object carries in its listing entry everything ListChecksums promises.
	checkNative(t, "listing", e, want, caps.ListChecksums)
	if e.Revision != w.Revision {
		t.Errorf("listing revision %q, write %q", e.Revision, w.Revision)
	}
	t.Logf("native checksums: write %s | stat %s | list %s", fmtSums(w), fmtSums(st), fmtSums(e))
}

func fmtSums(o providers.Object) string {
	var parts []string
	for _, c := range o.Checksums {
		s := string(c.Algorithm) + "=" + c.Value
		if c.Composite {
			s += "(composite)"
		}
		if c.FromETag {
			s += "(etag)"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ") + " enc=" + string(o.Encryption)
}

func testEmptyObject(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	want := sumsOf(nil)
	w := put(t, s, "empty", nil, providers.WriteOptions{Checksums: want})
	if w.Size != 0 {
		t.Fatalf("size %d", w.Size)
	}
	st, err := s.Stat(ctxT(t), "empty")
	if err != nil {
		t.Fatal(err)
	}
	checkNative(t, "stat empty", st, want, s.Capabilities().WriteChecksums)
	if got := get(t, s, "empty", providers.ReadOptions{}); len(got) != 0 {
		t.Fatalf("read %d bytes", len(got))
	}
	if got := get(t, s, "empty", providers.ReadOptions{Offset: 5, Length: 3}); len(got) != 0 {
		t.Fatalf("ranged read of empty object: %d bytes", len(got))
	}
}

var unicodeKeys = []string{
	"dir with spaces/file name.bin",
	"ünïcødé/模型-权重 (1).safetensors",
	"emoji/🚀 launch.txt",
	"chars/a+b=c&d;e,f@g$h'i!(j)~k.json",
	"chars/percent%20not-a-space %2F.txt",
	"chars/question?hash#.txt",
	"deep/a/b/c/d/e/f/g/h/i/j.bin",
}

func testUnicodeKeys(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	ctx := ctxT(t)
	for i, k := range unicodeKeys {
		put(t, s, k, []byte(fmt.Sprintf("content %d of %s", i, k)), providers.WriteOptions{})
	}
	got := list(t, s, "")
	want := slices.Clone(unicodeKeys)
	sort.Strings(want)
	if !slices.Equal(keys(got), want) {
		t.Fatalf("listed %q\nwant %q", keys(got), want)
	}
	for i, k := range unicodeKeys {
		if _, err := s.Stat(ctx, k); err != nil {
			t.Errorf("stat %q: %v", k, err)
		}
		if b := get(t, s, k, providers.ReadOptions{}); string(b) != fmt.Sprintf("content %d of %s", i, k) {
			t.Errorf("read %q: %q", k, b)
		}
	}
	if got := list(t, s, "ünïcødé"); len(got) != 1 {
		t.Errorf("list unicode dir: %v", keys(got))
	}
	if got := list(t, s, "dir with spaces"); len(got) != 1 {
		t.Errorf("list dir with spaces: %v", keys(got))
	}
	for _, k := range unicodeKeys {
		if err := s.Delete(ctx, k, providers.DeleteOptions{}); err != nil {
			t.Errorf("delete %q: %v", k, err)
		}
	}
	if got := list(t, s, ""); len(got) != 0 {
		t.Errorf("after deletes: %v", keys(got))
	}
}

var invalidKeys = []string{"", "/abs", "a//b", "a/../b", "..", ".", "a/./b", "trailing/", "back\\slash", "ctl\x01char", "nul\x00", "bad\xffutf8"}

func testInvalidKeys(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	ctx := ctxT(t)
	for _, k := range invalidKeys {
		_, err := s.Stat(ctx, k)
		wantErr(t, err, providers.ErrInvalidKey, fmt.Sprintf("stat %q", k))
		_, err = s.Write(ctx, k, strings.NewReader("x"), providers.WriteOptions{})
		wantErr(t, err, providers.ErrInvalidKey, fmt.Sprintf("write %q", k))
		_, err = read(ctx, s, k, providers.ReadOptions{})
		wantErr(t, err, providers.ErrInvalidKey, fmt.Sprintf("read %q", k))
		err = s.Delete(ctx, k, providers.DeleteOptions{})
		wantErr(t, err, providers.ErrInvalidKey, fmt.Sprintf("delete %q", k))
	}
	for _, d := range []string{"../x", "/abs", "a//b"} {
		err := s.List(ctx, d, func(providers.Object) error { return nil })
		wantErr(t, err, providers.ErrInvalidKey, fmt.Sprintf("list %q", d))
	}
	if got := list(t, s, ""); len(got) != 0 {
		t.Fatalf("invalid writes left %v", keys(got))
	}
}

func testListMany(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	ctx := ctxT(t)
	n := c.many
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			k := fmt.Sprintf("many/shard-%05d.bin", i)
			if _, err := s.Write(ctx, k, strings.NewReader(k), providers.WriteOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	put(t, s, "other/outside.bin", []byte("x"), providers.WriteOptions{})
	put(t, s, "many-but-not-below/x.bin", []byte("x"), providers.WriteOptions{})

	got := list(t, s, "many")
	if len(got) != n {
		t.Fatalf("listed %d objects under many/, want %d", len(got), n)
	}
	for i := range n {
		k := fmt.Sprintf("many/shard-%05d.bin", i)
		o, ok := got[k]
		if !ok {
			t.Fatalf("missing %q", k)
		}
		if o.Size != int64(len(k)) {
			t.Fatalf("%q size %d", k, o.Size)
		}
	}
	if all := list(t, s, ""); len(all) != n+2 {
		t.Fatalf("listed %d in all, want %d", len(all), n+2)
	}
	if got := list(t, s, "many/"); len(got) != n {
		t.Fatalf("list with trailing slash: %d", len(got))
	}

	// The callback's error stops the listing and comes back unchanged.
	stop := errors.New("stop")
	seen := 0
	err := s.List(ctx, "many", func(providers.Object) error {
		seen++
		if seen == 150 {
			return stop
		}
		return nil
	})
	if err != stop || seen != 150 {
		t.Fatalf("stopping list: err %v after %d", err, seen)
	}
}

func testListNested(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	for _, k := range []string{"a/1", "a/b/2", "a/b/c/3", "ab/4", "a.b/5", "b/6"} {
		put(t, s, k, []byte(k), providers.WriteOptions{})
	}
	for dir, want := range map[string][]string{
		"":      {"a.b/5", "a/1", "a/b/2", "a/b/c/3", "ab/4", "b/6"},
		"a":     {"a/1", "a/b/2", "a/b/c/3"},
		"a/b":   {"a/b/2", "a/b/c/3"},
		"a/b/c": {"a/b/c/3"},
		"a/1":   {},
		"zzz":   {},
	} {
		got := keys(list(t, s, dir))
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("list %q = %q, want %q", dir, got, want)
		}
	}
}

func testRangedReads(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	ctx := ctxT(t)
	data, _ := io.ReadAll(gen(7, 1<<20+123))
	size := int64(len(data))
	w := put(t, s, "weights.bin", data, providers.WriteOptions{})
	for _, r := range []struct {
		off, n   int64
		from, to int64
	}{
		{0, 0, 0, size},                   // whole
		{0, 100, 0, 100},                  // start
		{500000, 4096, 500000, 504096},    // middle
		{size - 10, 10, size - 10, size},  // end
		{size - 10, 100, size - 10, size}, // runs past the end
		{size - 1, 0, size - 1, size},     // last byte to the end
		{size, 10, size, size},            // starts at the end
		{size + 100, 0, size, size},       // starts past the end
		{size + 100, 5, size, size},
	} {
		got := get(t, s, "weights.bin", providers.ReadOptions{Offset: r.off, Length: r.n})
		if !bytes.Equal(got, data[r.from:r.to]) {
			t.Errorf("read %d+%d: got %d bytes, want %d (equal prefix: %v)", r.off, r.n, len(got), r.to-r.from,
				len(got) > 0 && bytes.HasPrefix(data[r.from:], got[:min(len(got), 16)]))
		}
	}
	// IfMatch pins a version.
	if got := get(t, s, "weights.bin", providers.ReadOptions{Offset: 10, Length: 10, IfMatch: w.Revision}); !bytes.Equal(got, data[10:20]) {
		t.Error("read with matching IfMatch")
	}
	put(t, s, "weights.bin", []byte("replaced"), providers.WriteOptions{})
	_, err := read(ctx, s, "weights.bin", providers.ReadOptions{Offset: 10, Length: 10, IfMatch: w.Revision})
	wantErr(t, err, providers.ErrPreconditionFailed, "read with stale IfMatch")

	// fn's own error comes back unchanged, and an early return is fine.
	mine := errors.New("mine")
	err = s.Read(ctx, "weights.bin", providers.ReadOptions{}, func(r io.Reader) error { return mine })
	if err != mine {
		t.Errorf("fn error came back as %v", err)
	}
	_, err = read(ctx, s, "weights.bin", providers.ReadOptions{Offset: -1})
	if err == nil {
		t.Error("negative offset accepted")
	}
}

// writeGenerated writes n generated bytes for seed, checking everything in opts.
func writeGenerated(t *testing.T, s providers.Store, key string, seed uint64, n int64, sized bool) (providers.Object, providers.Checksums) {
	t.Helper()
	want, _ := Sums(gen(seed, n))
	o := providers.WriteOptions{Checksums: want}
	if sized {
		o.Size = n
	}
	obj, err := s.Write(ctxT(t), key, gen(seed, n), o)
	if err != nil {
		t.Fatalf("write %q (%d bytes): %v", key, n, err)
	}
	if obj.Size != n {
		t.Fatalf("write %q: size %d, want %d", key, obj.Size, n)
	}
	return obj, want
}

func verifyGenerated(t *testing.T, s providers.Store, key string, seed uint64, n int64, want providers.Checksums) {
	t.Helper()
	ctx := ctxT(t)
	st, err := s.Stat(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size != n {
		t.Fatalf("stat size %d, want %d", st.Size, n)
	}
	checkNative(t, "stat "+key, st, want, s.Capabilities().WriteChecksums)
	t.Logf("%s native checksums: %s", key, fmtSums(st))
	var got providers.Checksums
	err = s.Read(ctx, key, providers.ReadOptions{}, func(r io.Reader) error {
		got, _ = Sums(r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	// A range across the first part boundary (parts are 5 MiB in the suite's stores).
	const off, ln = 5<<20 - 1000, 3000
	if n > off+ln {
		exp := make([]byte, ln)
		r := gen(seed, n)
		io.CopyN(io.Discard, r, off)
		io.ReadFull(r, exp)
		if b := get(t, s, key, providers.ReadOptions{Offset: off, Length: ln}); !bytes.Equal(b, exp) {
			t.Fatal("ranged read across a part boundary differs")
		}
	}
}

func testLargeMultipart(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	n := c.largeSize + 12345
	_, want := writeGenerated(t, s, "model/model-00001-of-00002.safetensors", 11, n, true)
	verifyGenerated(t, s, "model/model-00001-of-00002.safetensors", 11, n, want)
	if l := list(t, s, "model"); l["model/model-00001-of-00002.safetensors"].Size != n {
		t.Fatalf("listing: %+v", l)
	}
}

func testLargeUnknownSize(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	n := int64(12<<20 + 7)
	_, want := writeGenerated(t, s, "unsized.bin", 12, n, false)
	verifyGenerated(t, s, "unsized.bin", 12, n, want)
	// Exactly one part's worth, then exactly two.
	for _, m := range []int64{5 << 20, 10 << 20} {
		_, want := writeGenerated(t, s, fmt.Sprintf("exact-%d.bin", m), 13, m, false)
		verifyGenerated(t, s, fmt.Sprintf("exact-%d.bin", m), 13, m, want)
	}
}

func testContentMismatch(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	ctx := ctxT(t)
	small := []byte("bytes that do not match their manifest entry")
	good := sumsOf(small)
	other := sumsOf([]byte("something else"))
	for _, tc := range []struct {
		name string
		n    int64
		bad  func(providers.Checksums) providers.Checksums
	}{
		{"sha256", 100, func(s providers.Checksums) providers.Checksums { s.SHA256 = other.SHA256; return s }},
		{"md5", 100, func(s providers.Checksums) providers.Checksums { s.MD5 = other.MD5; return s }},
		{"crc32c", 100, func(s providers.Checksums) providers.Checksums { s.CRC32C = other.CRC32C; return s }},
		{"crc64nvme-multipart", 11 << 20, func(s providers.Checksums) providers.Checksums { s.CRC64NVME = other.CRC64NVME; return s }},
		{"crc32-multipart", 11 << 20, func(s providers.Checksums) providers.Checksums { s.CRC32 = other.CRC32; return s }},
	} {
		key := "bad/" + tc.name
		want, _ := Sums(gen(3, tc.n))
		_, err := s.Write(ctx, key, gen(3, tc.n), providers.WriteOptions{Size: tc.n, Checksums: tc.bad(want)})
		wantErr(t, err, providers.ErrContentMismatch, "write with wrong "+tc.name)
		_, err = s.Stat(ctx, key)
		wantErr(t, err, providers.ErrNotFound, "stat after mismatched write "+tc.name)
	}
	// A declared size that the content does not have.
	_, err := s.Write(ctx, "bad/size", bytes.NewReader(small), providers.WriteOptions{Size: int64(len(small)) + 1, Checksums: good})
	wantErr(t, err, providers.ErrContentMismatch, "write with wrong size")
	_, err = s.Write(ctx, "bad/size-large", gen(4, 6<<20), providers.WriteOptions{Size: 7 << 20})
	wantErr(t, err, providers.ErrContentMismatch, "multipart write with wrong size")
	// A malformed expected checksum is a usage error, not a mismatch.
	_, err = s.Write(ctx, "bad/malformed", bytes.NewReader(small), providers.WriteOptions{Checksums: providers.Checksums{MD5: "not base64!"}})
	if err == nil || errors.Is(err, providers.ErrContentMismatch) {
		t.Errorf("malformed checksum: %v", err)
	}
	// A mismatching overwrite leaves the old object intact.
	put(t, s, "bad/keep", small, providers.WriteOptions{})
	_, err = s.Write(ctx, "bad/keep", strings.NewReader("new"), providers.WriteOptions{Checksums: other})
	wantErr(t, err, providers.ErrContentMismatch, "overwrite with wrong checksum")
	if got := get(t, s, "bad/keep", providers.ReadOptions{}); !bytes.Equal(got, small) {
		t.Fatalf("old content replaced: %q", got)
	}
	if l := list(t, s, ""); len(l) != 1 {
		t.Fatalf("left behind: %v", keys(l))
	}
}

// cancelAfter cancels ctx once n bytes have been read through it, then keeps failing.
type cancelAfter struct {
	r      io.Reader
	n      int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
		return 0, context.Canceled
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}

func testCancelledWrite(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	for _, n := range []int64{1000, 12 << 20} {
		ctx, cancel := context.WithCancel(ctxT(t))
		key := fmt.Sprintf("cancelled-%d", n)
		_, err := s.Write(ctx, key, &cancelAfter{r: gen(5, n), n: n / 2, cancel: cancel}, providers.WriteOptions{})
		cancel()
		if err == nil {
			t.Fatalf("cancelled write of %d bytes succeeded", n)
		}
		_, err = s.Stat(ctxT(t), key)
		wantErr(t, err, providers.ErrNotFound, "stat after cancelled write")
	}
	// An already-cancelled context fails fast.
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()
	_, err := s.Stat(ctx, "x")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("stat with cancelled ctx: %v", err)
	}
	if errors.Is(err, providers.ErrUnreachable) {
		t.Errorf("cancellation reported as unreachable: %v", err)
	}
}

func testOverwrite(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	w1 := put(t, s, "state/journal.json", []byte("v1"), providers.WriteOptions{})
	w2 := put(t, s, "state/journal.json", []byte("version two"), providers.WriteOptions{})
	if w1.Revision == w2.Revision {
		t.Fatalf("revision did not change: %q", w1.Revision)
	}
	if got := get(t, s, "state/journal.json", providers.ReadOptions{}); string(got) != "version two" {
		t.Fatalf("got %q", got)
	}
	if l := list(t, s, ""); len(l) != 1 || l["state/journal.json"].Size != 11 {
		t.Fatalf("list %+v", l)
	}
}

func testCreateRace(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	ctx := ctxT(t)
	const n = 16
	var wg sync.WaitGroup
	results := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			body := fmt.Sprintf("holder %d", i)
			_, results[i] = s.Write(ctx, "locks/failover.lock", strings.NewReader(body), providers.WriteOptions{IfNotExists: true})
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range results {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("two winners: %d and %d", winner, i)
			}
			winner = i
		case !errors.Is(err, providers.ErrPreconditionFailed):
			t.Errorf("loser %d: %v, want ErrPreconditionFailed", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("nobody won the race")
	}
	if got := get(t, s, "locks/failover.lock", providers.ReadOptions{}); string(got) != fmt.Sprintf("holder %d", winner) {
		t.Fatalf("lock holds %q, winner was %d", got, winner)
	}
	_, err := s.Write(ctx, "locks/failover.lock", strings.NewReader("late"), providers.WriteOptions{IfNotExists: true})
	wantErr(t, err, providers.ErrPreconditionFailed, "create over an existing object")
}

func testCreateMultipart(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	ctx := ctxT(t)
	n := int64(11 << 20)
	if _, err := s.Write(ctx, "big.lock", gen(8, n), providers.WriteOptions{IfNotExists: true, Size: n}); err != nil {
		t.Fatalf("first multipart create: %v", err)
	}
	_, err := s.Write(ctx, "big.lock", gen(9, n), providers.WriteOptions{IfNotExists: true, Size: n})
	wantErr(t, err, providers.ErrPreconditionFailed, "second multipart create")
	want, _ := Sums(gen(8, n))
	verifyGenerated(t, s, "big.lock", 8, n, want)
}

func testCAS(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	ctx := ctxT(t)
	w1 := put(t, s, "journal", []byte("step 1"), providers.WriteOptions{IfNotExists: true})
	w2 := put(t, s, "journal", []byte("step 1, step 2"), providers.WriteOptions{IfMatch: w1.Revision})
	if w2.Revision == w1.Revision || w2.Revision == "" {
		t.Fatalf("revisions %q -> %q", w1.Revision, w2.Revision)
	}
	_, err := s.Write(ctx, "journal", strings.NewReader("stale writer"), providers.WriteOptions{IfMatch: w1.Revision})
	wantErr(t, err, providers.ErrPreconditionFailed, "CAS with a stale revision")
	if got := get(t, s, "journal", providers.ReadOptions{}); string(got) != "step 1, step 2" {
		t.Fatalf("journal holds %q", got)
	}
	st, err := s.Stat(ctx, "journal")
	if err != nil || st.Revision != w2.Revision {
		t.Fatalf("stat revision %q (%v), want %q", st.Revision, err, w2.Revision)
	}
	_, err = s.Write(ctx, "missing-journal", strings.NewReader("x"), providers.WriteOptions{IfMatch: w2.Revision})
	wantErr(t, err, providers.ErrPreconditionFailed, "CAS on a missing object")
	if _, err := s.Stat(ctx, "missing-journal"); !errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("CAS on missing created it: %v", err)
	}
	// Multipart CAS.
	n := int64(11 << 20)
	w3, err := s.Write(ctx, "journal", gen(10, n), providers.WriteOptions{IfMatch: w2.Revision, Size: n})
	if err != nil {
		t.Fatalf("multipart CAS: %v", err)
	}
	_, err = s.Write(ctx, "journal", gen(10, n), providers.WriteOptions{IfMatch: w2.Revision, Size: n})
	wantErr(t, err, providers.ErrPreconditionFailed, "stale multipart CAS")
	if st, _ := s.Stat(ctx, "journal"); st.Revision != w3.Revision {
		t.Fatalf("revision %q after stale multipart CAS, want %q", st.Revision, w3.Revision)
	}
	_, err = s.Write(ctx, "journal", strings.NewReader("x"), providers.WriteOptions{IfMatch: "x", IfNotExists: true})
	if err == nil {
		t.Fatal("IfMatch with IfNotExists accepted")
	}
}

func testCASRace(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	ctx := ctxT(t)
	base := put(t, s, "state", []byte("base"), providers.WriteOptions{})
	const n = 8
	var wg sync.WaitGroup
	results := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, results[i] = s.Write(ctx, "state", strings.NewReader(fmt.Sprintf("writer %d", i)), providers.WriteOptions{IfMatch: base.Revision})
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range results {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("two CAS winners: %d and %d", winner, i)
			}
			winner = i
		case !errors.Is(err, providers.ErrPreconditionFailed):
			t.Errorf("CAS loser %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no CAS winner")
	}
	if got := get(t, s, "state", providers.ReadOptions{}); string(got) != fmt.Sprintf("writer %d", winner) {
		t.Fatalf("state %q, winner %d", got, winner)
	}
}

func testConditionalDelete(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	s := newStore(t)
	ctx := ctxT(t)
	w1 := put(t, s, "lock", []byte("mine"), providers.WriteOptions{})
	w2 := put(t, s, "lock", []byte("someone else's"), providers.WriteOptions{})
	err := s.Delete(ctx, "lock", providers.DeleteOptions{IfMatch: w1.Revision})
	wantErr(t, err, providers.ErrPreconditionFailed, "delete with a stale revision")
	if _, err := s.Stat(ctx, "lock"); err != nil {
		t.Fatalf("stale conditional delete removed the object: %v", err)
	}
	if err := s.Delete(ctx, "lock", providers.DeleteOptions{IfMatch: w2.Revision}); err != nil {
		t.Fatalf("delete with the current revision: %v", err)
	}
	_, err = s.Stat(ctx, "lock")
	wantErr(t, err, providers.ErrNotFound, "stat after delete")
	err = s.Delete(ctx, "lock", providers.DeleteOptions{IfMatch: w2.Revision})
	if !errors.Is(err, providers.ErrNotFound) && !errors.Is(err, providers.ErrPreconditionFailed) {
		t.Fatalf("conditional delete of a missing object: %v", err)
	}
	if err := s.Delete(ctx, "lock", providers.DeleteOptions{}); err != nil {
		t.Fatalf("unconditional delete of a missing object: %v", err)
	}
}

func testDenied(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	if c.denied == nil {
		t.Skip("no denied store for this provider")
	}
	s := c.denied(t)
	ctx := ctxT(t)
	err := s.List(ctx, "", func(providers.Object) error { return nil })
	wantErr(t, err, providers.ErrPermission, "list")
	_, err = s.Stat(ctx, "model/config.json")
	wantErr(t, err, providers.ErrPermission, "stat")
	_, err = read(ctx, s, "model/config.json", providers.ReadOptions{})
	wantErr(t, err, providers.ErrPermission, "read")
	_, err = s.Write(ctx, "model/config.json", strings.NewReader("{}"), providers.WriteOptions{})
	wantErr(t, err, providers.ErrPermission, "write")
	for _, e := range []error{providers.ErrNotFound, providers.ErrUnreachable} {
		if errors.Is(err, e) {
			t.Fatalf("permission error also matches %v", e)
		}
	}
	t.Logf("permission error reads: %v", err)
}

func testPrefixes(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	if c.sub == nil {
		t.Skip("no sub-store for this provider")
	}
	base := newStore(t)
	sub := c.sub(t, base, "replica-a")
	put(t, sub, "model/config.json", []byte("{}"), providers.WriteOptions{})
	put(t, base, "replica-b/model/config.json", []byte("{ }"), providers.WriteOptions{})
	put(t, base, "replica-ab/x", []byte("not in replica-a"), providers.WriteOptions{})
	if got := keys(list(t, base, "")); !slices.Equal(got, []string{"replica-a/model/config.json", "replica-ab/x", "replica-b/model/config.json"}) {
		t.Fatalf("base lists %q", got)
	}
	if got := keys(list(t, sub, "")); !slices.Equal(got, []string{"model/config.json"}) {
		t.Fatalf("sub lists %q", got)
	}
	if _, err := sub.Stat(ctxT(t), "model/config.json"); err != nil {
		t.Fatal(err)
	}
	if b := get(t, base, "replica-a/model/config.json", providers.ReadOptions{}); string(b) != "{}" {
		t.Fatalf("base reads %q", b)
	}
	_, err := sub.Stat(ctxT(t), "x")
	wantErr(t, err, providers.ErrNotFound, "sibling prefix object via sub")
}

func testHostileKeys(t *testing.T, c *config, newStore func(*testing.T) providers.Store) {
	if c.plant == nil {
		t.Skip("no way to plant raw names for this provider")
	}
	s := newStore(t)
	put(t, s, "good/file.bin", []byte("ok"), providers.WriteOptions{})
	planted := 0
	for _, raw := range []string{"evil/../../escape", "evil//double", "evil/./dot", "evil/back\\slash", "evil/ctl\x01"} {
		if err := c.plant(t, s, raw, []byte("x")); err != nil {
			t.Logf("cannot plant %q here: %v", raw, err)
			continue
		}
		planted++
	}
	if planted == 0 {
		t.Skip("the service holds none of the hostile names")
	}
	var seen []string
	err := s.List(ctxT(t), "", func(o providers.Object) error {
		if providers.ValidateKey(o.Key) != nil {
			t.Errorf("listing passed an invalid key %q", o.Key)
		}
		seen = append(seen, o.Key)
		return nil
	})
	wantErr(t, err, providers.ErrInvalidKey, "listing with hostile names")
	// Services normalise some names on the way in ("a//b" may come back as "a/b"), so the count of
	// names reported is at most what was planted; at least one must survive as planted.
	var ike *providers.InvalidKeysError
	if !errors.As(err, &ike) || ike.Count < 1 || ike.Count > planted {
		t.Fatalf("invalid keys error %v, planted %d", err, planted)
	}
	if !slices.Contains(seen, "good/file.bin") {
		t.Fatalf("valid object not listed: %q", seen)
	}
	t.Logf("planted %d hostile names; listing said: %v", planted, err)
}
