package verify

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"lifeboat/internal/base/wait"
	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/providers/checksum"
)

// deepFiles reads and hashes every present, right-sized manifest file, largest first (so that
// no big file is left to run alone at the end), at most Jobs files at once across replicas.
func (r *runner) deepFiles(ctx context.Context, m *manifest.Manifest, s providers.Store, listing map[string]providers.Object, files []FileResult, errs []error, res *ReplicaResult) {
	var todo []int
	var planned int64
	for i, f := range m.Files {
		obj, ok := listing[f.Path]
		switch {
		case !ok:
			files[i] = missing(f, "listing")
		case obj.Size != f.Size:
			files[i], _ = judgeQuick(f, obj, "listing", s.Capabilities())
		default:
			todo = append(todo, i)
			planned += f.Size
		}
	}
	r.o.Planned(planned)
	sort.SliceStable(todo, func(a, b int) bool { return m.Files[todo[a]].Size > m.Files[todo[b]].Size })
	var read counter
	var wg sync.WaitGroup
	r.pending.Add(int64(len(todo)))
	for _, i := range todo {
		select {
		case r.files <- struct{}{}:
			r.pending.Add(-1)
		case <-ctx.Done():
			r.pending.Add(-1)
			files[i], errs[i] = errorResult(m.Files[i], FileResult{}, ctx.Err()), ctx.Err()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-r.files }()
			files[i], errs[i] = r.deepFile(ctx, s, m.Files[i], listing[m.Files[i].Path], &read)
		}()
	}
	wg.Wait()
	res.BytesRead = read.n.Load()
}

// deepFile hashes one object whose listed size matches the manifest.
func (r *runner) deepFile(ctx context.Context, s providers.Store, f manifest.File, obj providers.Object, read *counter) (FileResult, error) {
	if f.Size == 0 {
		fr, _ := judgeQuick(f, obj, "listing", s.Capabilities())
		if fr.Status == StatusOK || fr.Status == StatusUnverified {
			fr.Status, fr.Detail = StatusOK, "empty, as the manifest says: the size proves the content"
			if !strings.EqualFold(f.Sums.SHA256, emptySHA256) {
				fr.Status, fr.Detail = StatusCorrupt, "empty, but the manifest's sha256 is not that of no bytes"
			} else if f.Sums.BLAKE3 != "" && f.Sums.BLAKE3 != emptyBLAKE3 {
				fr.Status, fr.Detail = StatusCorrupt, "empty, but the manifest's blake3 is not that of no bytes"
			}
		}
		return fr, nil
	}
	h := newFileHash(f, obj, r.proof(f))
	err := r.readObject(ctx, s, f.Path, f.Size, obj.Revision, h)
	if errors.Is(err, providers.ErrPreconditionFailed) {
		// The object changed since it was listed (or the store did not accept the listed
		// revision): look again and read what is there now, once.
		st, serr := r.stat(ctx, s, f.Path)
		switch {
		case errors.Is(serr, providers.ErrNotFound):
			fr := missing(f, "stat")
			fr.Detail = "listed, then gone when read"
			return fr, nil
		case serr != nil:
			return errorResult(f, FileResult{}, serr), serr
		case st.Size != f.Size:
			fr, _ := judgeQuick(f, st, "stat", s.Capabilities())
			return fr, nil
		}
		obj = st
		h = newFileHash(f, obj, r.proof(f))
		err = r.readObject(ctx, s, f.Path, f.Size, obj.Revision, h)
	}
	switch {
	case errors.Is(err, providers.ErrNotFound):
		fr := missing(f, "read")
		fr.Detail = "listed, then gone when read"
		return fr, nil
	case err != nil:
		size := obj.Size
		return errorResult(f, FileResult{Actual: Facts{Size: &size, Source: "listing"}}, err), err
	}
	read.n.Add(f.Size)
	fr := h.verdict(f, obj)
	if fr.Status == StatusCorrupt && h.storeErr == nil && statAddsChecksums(s.Capabilities()) {
		fr = r.diagnose(ctx, s, f, obj, fr, read)
	}
	return fr, nil
}

// diagnose says, for a corrupt file on a store whose listing shows no CRC but whose Stat does
// (S3), whether the store's own CRC64NVME describes the bytes read (the object was written with
// them) or the manifest's (damaged after upload). That takes the CRC of the bytes, which the
// first read does not compute: on every byte it would pay for a diagnosis only a corrupt file
// needs (the S3 store's own CRC check of the body is skipped too: ReadOptions.Hashed). So the
// object is read again, once, for it: right this time, the first read was damaged in transit;
// wrong again with the same bytes, they are damaged at rest.
func (r *runner) diagnose(ctx context.Context, s providers.Store, f manifest.File, obj providers.Object, fr FileResult, read *counter) FileResult {
	st, err := r.stat(ctx, s, f.Path)
	if err != nil || st.Revision != obj.Revision {
		return fr
	}
	if _, ok := st.Checksum(providers.CRC64NVME); !ok || want(f, providers.CRC64NVME) == "" {
		return fr
	}
	if r.o.Planned != nil {
		r.o.Planned(f.Size)
	}
	h := newFileHash(f, st, r.proof(f), providers.CRC64NVME)
	if err := r.readObject(ctx, s, f.Path, f.Size, st.Revision, h); err != nil {
		return fr // the verdict stands; only its diagnosis is missing
	}
	read.n.Add(f.Size)
	again := h.verdict(f, st)
	switch {
	case again.Status == StatusOK:
		again.Detail += "; an earlier read of it hashed to something else (damaged in transit)"
	case again.Status == StatusCorrupt && checksum.Equal(h.alg, again.Actual.Get(h.alg), fr.Actual.Get(h.alg)):
		// Two reads, the same wrong bytes: what the store holds is wrong, not what crossed the
		// network.
		stored, _ := st.Checksum(providers.CRC64NVME)
		if checksum.Equal(providers.CRC64NVME, stored.Value, want(f, providers.CRC64NVME)) {
			again.Detail = fmt.Sprintf("%s of the bytes read differs from the manifest, the same on a second read, and the store's %s matches the manifest, not the bytes: damaged at rest, after upload", h.alg, providers.CRC64NVME)
		} else {
			again.Detail += "; the same on a second read: the store holds these bytes"
		}
	}
	return again
}

func (r *runner) stat(ctx context.Context, s providers.Store, key string) (providers.Object, error) {
	if err := r.acquire(ctx); err != nil {
		return providers.Object{}, err
	}
	defer r.release()
	return s.Stat(ctx, key)
}

// fileHash computes the proving hash — BLAKE3 where the manifest records it, else SHA-256 (see
// Options.Digest) — and the CRCs the object also carries natively (cheap: CRC32C and CRC64NVME
// run at tens of GB/s), which tell, when the bytes are wrong, whether the store's own checksum
// describes them. MD5 is not recomputed: at ~0.7 GB/s it would halve the rate, and a matching
// cryptographic hash already implies the manifest's MD5.
type fileHash struct {
	alg  providers.Algorithm // checksum.BLAKE3 or checksum.SHA256
	h    hash.Hash
	want string // the manifest's value of alg
	crcs map[providers.Algorithm]hash.Hash
	all  []hash.Hash
	// storeErr is what the store reported after delivering every byte (its own checksum check
	// failing); the verdict then rests on the cryptographic hash alone and says so.
	storeErr error
}

// matches reports whether the bytes so far hash to the manifest's value.
func (h *fileHash) matches() bool {
	return checksum.Equal(h.alg, checksum.Sum(h.alg, h.h), h.want)
}

// proof is the hash that proves f's bytes: BLAKE3, ~2.7× faster per core than SHA-256 and as
// collision-resistant, when the manifest records it and SHA-256 is not asked for.
func (r *runner) proof(f manifest.File) providers.Algorithm {
	if r.o.Digest == checksum.SHA256 {
		return checksum.SHA256
	}
	return f.Sums.Proof()
}

func newFileHash(f manifest.File, obj providers.Object, proof providers.Algorithm, extra ...providers.Algorithm) *fileHash {
	h := &fileHash{alg: proof, h: checksum.New(proof), want: f.Sums.Get(proof), crcs: map[providers.Algorithm]hash.Hash{}}
	h.all = append(h.all, h.h)
	for _, alg := range []providers.Algorithm{providers.CRC64NVME, providers.CRC32C, providers.CRC32} {
		if _, ok := obj.Checksum(alg); (!ok && !slices.Contains(extra, alg)) || want(f, alg) == "" {
			continue
		}
		c := checksum.New(alg)
		h.crcs[alg] = c
		h.all = append(h.all, c)
	}
	return h
}

func (h *fileHash) Write(p []byte) (int, error) {
	for _, x := range h.all {
		x.Write(p)
	}
	return len(p), nil
}

func (h *fileHash) Reset() {
	for _, x := range h.all {
		x.Reset()
	}
}

// verdict compares the hashes of all bytes with the manifest.
func (h *fileHash) verdict(f manifest.File, obj providers.Object) FileResult {
	size := obj.Size
	actual := Facts{Size: &size, Source: "read"}
	actual.Set(h.alg, checksum.Sum(h.alg, h.h))
	for alg, c := range h.crcs {
		actual.Set(alg, checksum.Sum(alg, c))
	}
	fr := FileResult{Path: f.Path, Actual: actual, Expected: expectedFacts(f, actual)}
	if h.matches() {
		fr.Status = StatusOK
		fr.Detail = fmt.Sprintf("%s of all %d bytes matches", h.alg, f.Size)
		// The bytes are right; a stored checksum that disagrees is wrong metadata (quick
		// verification reports it as CHECKSUM_MISMATCH until the object is rewritten).
		var wrong []string
		for _, c := range obj.Checksums {
			exp := want(f, c.Algorithm)
			if c.Composite || exp == "" || checksum.Equal(c.Algorithm, c.Value, exp) {
				continue
			}
			if c.FromETag && obj.Encryption != providers.EncryptionNone && obj.Encryption != providers.EncryptionServerManaged {
				continue // may not be an MD5 at all
			}
			wrong = append(wrong, fmt.Sprintf("%s %s", c.Algorithm, c.Value))
		}
		if len(wrong) > 0 {
			fr.Detail += fmt.Sprintf("; but the store's own %s does not (wrong metadata: quick verify reports CHECKSUM_MISMATCH until the object is rewritten)", strings.Join(wrong, ", "))
		}
		if h.storeErr != nil {
			fr.Detail += fmt.Sprintf("; the store reported an error after the last byte, which the hash overrules: %v", h.storeErr)
		}
		return fr
	}
	fr.Status = StatusCorrupt
	fr.Detail = fmt.Sprintf("%s of the bytes read differs from the manifest", h.alg)
	if h.storeErr != nil {
		fr.Detail += fmt.Sprintf("; the store's own integrity check rejected them on every read: most likely damaged at rest (%v)", h.storeErr)
	}
	for alg := range h.crcs {
		if h.storeErr != nil {
			break // said already
		}
		stored, _ := obj.Checksum(alg)
		switch got := actual.Get(alg); {
		case checksum.Equal(alg, stored.Value, got):
			fr.Detail += fmt.Sprintf("; the store's %s matches the bytes read: the object was written with these bytes", alg)
		case checksum.Equal(alg, stored.Value, want(f, alg)):
			fr.Detail += fmt.Sprintf("; the store's %s matches the manifest, not the bytes read: damaged after upload or in transit", alg)
		}
	}
	return fr
}

// readObject streams the size bytes of key into h. A file is read whole, in one request, as it
// streams (whole-object GETs are what servers serve cheapest: no per-request work, sendfile);
// several files are read at once, one worker each. Splitting a file into ranges cannot speed up
// its hash, which is sequential; it only adds transfer parallelism, at the price of buffers for
// the ranges ahead of the hash. So a file is split only in the tail (see tail): when no file is
// left to start and so few are still being read that the range buffers would otherwise sit idle —
// the last big shards — and only when the connection is what holds the file back: the read has
// waited four times longer for bytes than it took to hash them (a distant cloud: ~100 MB/s per
// connection against ~3.4 GB/s of BLAKE3, ~1.3 GB/s of SHA-256); on local disk or a fast link the hash is the limit
// and ranges would only cost buffers. A whole read then stops where it is and the rest of the
// file is read as parallel ranges (pipeline), pinned to the same revision.
func (r *runner) readObject(ctx context.Context, s providers.Store, key string, size int64, rev string, h *fileHash) error {
	at, err := r.stream(ctx, s, key, size, rev, h, size >= 2*r.o.RangeSize)
	if err != nil || at == size {
		return err
	}
	return r.pipeline(ctx, s, key, at, size, rev, h)
}

// tail reports whether the range buffers would sit idle: every file has been started, and at
// most half as many are being read as there are buffers (so a split file gets at least two
// ranges in flight).
func (r *runner) tail() bool {
	return r.pending.Load() == 0 && 2*len(r.files) <= r.bufs.max
}

// errSplit ends a whole read that is to go on as ranges (it never leaves stream).
var errSplit = errors.New("switching to ranged reads")

// stream reads key whole into h, retried from the start (ReadAttempts, the same rules as a
// range), and returns how many bytes h holds: size, or fewer when splittable and the tail began
// meanwhile (the caller reads the rest as ranges). Progress is reported as bytes are hashed, each
// offset once however often an attempt starts over.
func (r *runner) stream(ctx context.Context, s providers.Store, key string, size int64, rev string, h *fileHash, splittable bool) (int64, error) {
	// Files over 1 MiB are read ahead (see chunks), into three buffers.
	ahead := size > 1<<20
	var bufs [][]byte
	for range map[bool]int{false: 1, true: 3}[ahead] {
		bp := copyBufs.Get().(*[]byte)
		defer copyBufs.Put(bp)
		bufs = append(bufs, *bp)
	}
	var n, reported int64
	complete, split := false, false   // complete: the last attempt delivered every byte before failing
	var waited, hashing time.Duration // in this attempt: blocked in the body's Read, in the hash
	err := r.retry(ctx, func() error {
		// Hashed: every byte is proven by the hash here, so the store's own CRC of the body
		// (S3) would only cost CPU; a wrong one is still diagnosed (see diagnose).
		err := r.read(ctx, s, key, providers.ReadOptions{IfMatch: rev, Hashed: true}, func(rd io.Reader) error {
			h.Reset() // the callback may be re-invoked by a retrying store
			h.storeErr = nil
			n, complete = 0, false
			waited, hashing = 0, 0
			next, stop := chunks(rd, bufs, ahead)
			defer stop()
			var err error
			for err == nil {
				if err := ctx.Err(); err != nil {
					return err // a local file's reader does not watch ctx
				}
				if splittable && n >= 1<<20 && waited > 4*hashing && size-n >= 2*r.o.RangeSize && r.tail() {
					split = true
					return errSplit
				}
				var p []byte
				t0 := time.Now()
				p, err = next()
				t1 := time.Now()
				if n += int64(len(p)); n > size {
					return &lengthError{got: n, want: size}
				}
				h.Write(p)
				waited, hashing = waited+t1.Sub(t0), hashing+time.Since(t1)
				if n > reported {
					r.o.Progress(n - reported)
					reported = n
				}
			}
			complete = n == size
			switch {
			case err == io.EOF && complete:
				return nil
			case err != io.EOF && complete && h.matches():
				// Every byte arrived and hashes to the manifest's value: proven, whatever
				// the store then complained about (a checksum header altered in transit, a
				// stored checksum that is wrong); noted in the verdict.
				h.storeErr = err
				return nil
			case err != io.EOF && (complete || ctx.Err() != nil):
				return err
			case err != io.EOF:
				// Short. A clean body that ends early also fails the store's checksum check
				// at its end (S3, GCS), but the missing bytes are the cause: a broken read.
				return &lengthError{got: n, want: size, cause: err}
			}
			return &lengthError{got: n, want: size}
		})
		if split && errors.Is(err, errSplit) {
			return nil
		}
		return err
	})
	if err != nil && complete && !errors.Is(err, providers.ErrUnreachable) && retryable(ctx, err) {
		// Every attempt delivered the whole object and the store's own integrity check (S3's
		// x-amz-checksum on a whole-object GET, GCS's CRC32C) rejected it each time: the stored
		// bytes do not match the store's own checksum. The hash of what arrived is the verdict.
		h.storeErr = err
		err = nil
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

// chunks returns rd's bytes as chunks, each valid until the next call, read into bufs. With
// ahead, rd is read on a goroutine of its own, up to len(bufs)-1 chunks ahead, so that reading —
// a copy from the page cache or a socket, ~0.3 core-seconds per GB — can run on another core
// than the hash, which is sequential: a lone big file (fewer files than cores) then hashes at
// the rate of the hash alone. With more files than cores it costs nothing but the buffers. stop
// ends that goroutine and waits for its Read in flight: nothing touches rd once the callback has
// returned.
func chunks(rd io.Reader, bufs [][]byte, ahead bool) (next func() ([]byte, error), stop func()) {
	if !ahead {
		return func() ([]byte, error) {
			k, err := rd.Read(bufs[0])
			return bufs[0][:k], err
		}, func() {}
	}
	type chunk struct {
		b   []byte
		err error
	}
	full, free := make(chan chunk, len(bufs)), make(chan []byte, len(bufs))
	for _, b := range bufs {
		free <- b
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			var b []byte
			select {
			case b = <-free:
			case <-done:
				return
			}
			select {
			case <-done:
				return
			default:
			}
			k, err := rd.Read(b)
			full <- chunk{b[:k], err} // never blocks: there are only len(bufs) buffers
			if err != nil {
				return
			}
		}
	}()
	var last []byte
	next = func() ([]byte, error) {
		if last != nil {
			free <- last[:cap(last)] // never blocks, likewise
		}
		c := <-full
		last = c.b
		return c.b, c.err
	}
	return next, func() { close(done); wg.Wait() }
}

// read is one Store.Read. A body that stops moving is ended by the store's stall guard
// (providers.WithStallGuard; Options.StallTimeout tightens it) as ErrUnreachable, which retry
// retries.
func (r *runner) read(ctx context.Context, s providers.Store, key string, o providers.ReadOptions, fn func(io.Reader) error) error {
	return s.Read(ctx, key, o, fn)
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// lengthError: a read delivered another number of bytes than asked for; cause is the error the
// body ended with, if any. Short, it is ErrUnreachable whatever the cause says (a clean but short
// body also fails a checksum check at its end, yet the missing bytes are what went wrong).
type lengthError struct {
	got, want int64
	cause     error
}

// Is makes a short read a broken connection for providers.KindOf (unreachable after retries); a
// longer one is not.
func (e *lengthError) Is(target error) bool {
	return target == providers.ErrUnreachable && e.got < e.want
}

func (e *lengthError) Unwrap() error { return e.cause }

func (e *lengthError) Error() string {
	if e.got < e.want && e.cause != nil {
		return fmt.Sprintf("short read: %d of %d bytes, then %v", e.got, e.want, e.cause)
	}
	if e.got < e.want {
		return fmt.Sprintf("short read: %d of %d bytes", e.got, e.want)
	}
	return fmt.Sprintf("read returned more than the %d bytes asked for", e.want)
}

// retry runs one read or listing (which takes a request token for its duration) and tries a read
// again, up to ReadAttempts times, only when it failed in the one way the layers below cannot
// see: the body ended cleanly with another number of bytes than the object has (a proxy that
// shortened it). Everything else already had its retries, once, where they belong (see
// providers/retry.go): a request with no usable answer by the SDK, a body that broke or stalled
// by providers.WithRetry. Retrying those here too would multiply the attempts (3 × 3), and delay
// an UNREACHABLE verdict that the store already earned.
func (r *runner) retry(ctx context.Context, read func() error) error {
	backoff := r.o.RetryBackoff
	for attempt := 1; ; attempt++ {
		err := r.acquire(ctx)
		if err != nil {
			return err
		}
		err = read()
		r.release()
		if err == nil || attempt >= r.o.ReadAttempts || !cleanLengthError(ctx, err) {
			if err != nil && attempt > 1 {
				err = fmt.Errorf("%w (after %d attempts)", err, attempt)
			}
			return err
		}
		if err := wait.Sleep(ctx, backoff); err != nil {
			return err
		}
		backoff *= 2
	}
}

// retryable is providers' one classification: not found, denied, misconfigured, invalid, a lost
// race and an ended context are final; a broken body, an unreachable store, bytes that changed
// in transit and the unknown may succeed on another attempt.
func retryable(ctx context.Context, err error) bool { return providers.Retryable(ctx, err) }

// cleanLengthError reports a read whose body ended without an error of its own but short or long:
// no store or wrapper saw a failure, so only this caller, knowing the size, can try again.
func cleanLengthError(ctx context.Context, err error) bool {
	var le *lengthError
	return ctx.Err() == nil && errors.As(err, &le) && le.cause == nil
}

// pipeline reads [from, size) of key as ranges of RangeSize in parallel — each into its own buffer
// from the shared pool, pinned to rev — and feeds them to h strictly in order. At most
// bufPool.max ranges are buffered across all files, so memory does not grow with the file.
//
// Progress cannot stall: a range is launched only once it holds a buffer, and ranges are
// launched in order, so every file's lowest unhashed range holds a buffer and only waits for
// its own request.
func (r *runner) pipeline(ctx context.Context, s providers.Store, key string, from, size int64, rev string, h *fileHash) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type slot struct {
		buf  []byte
		err  error
		done chan struct{}
	}
	window := r.bufs.max
	queue := make(chan *slot, window)
	tokens := make(chan struct{}, window)
	var fetches sync.WaitGroup
	go func() {
		defer close(queue)
		for off := from; off < size; off += r.o.RangeSize {
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				return
			}
			buf, err := r.bufs.get(ctx)
			if err != nil {
				<-tokens
				return
			}
			sl := &slot{buf: buf[:min(r.o.RangeSize, size-off)], done: make(chan struct{})}
			fetches.Add(1)
			go func() {
				defer fetches.Done()
				defer close(sl.done)
				sl.err = r.retry(ctx, func() error {
					return r.read(ctx, s, key, providers.ReadOptions{Offset: off, Length: int64(len(sl.buf)), IfMatch: rev, Hashed: true}, func(rd io.Reader) error {
						return fillRange(rd, sl.buf) // refills from the start if re-invoked
					})
				})
			}()
			queue <- sl // never blocks: at most window slots exist
		}
	}()
	var err error
	hashed := from
	for sl := range queue {
		<-sl.done
		if err == nil && sl.err != nil {
			err = sl.err
			cancel()
		}
		if err == nil {
			h.Write(sl.buf)
			hashed += int64(len(sl.buf))
			r.o.Progress(int64(len(sl.buf)))
		}
		r.bufs.put(sl.buf)
		<-tokens
	}
	fetches.Wait()
	if err == nil && hashed != size {
		err = ctx.Err()
		if err == nil {
			err = &lengthError{got: hashed, want: size}
		}
	}
	return err
}

// fillRange reads exactly len(buf) bytes and checks that the body ends there. A body that ends
// early — cleanly (a well-formed but short response) or not (a truncated one) — is a short read.
func fillRange(rd io.Reader, buf []byte) error {
	n, err := io.ReadFull(rd, buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return &lengthError{got: int64(n), want: int64(len(buf))}
	}
	if err != nil {
		return err
	}
	var one [1]byte
	if m, _ := io.ReadFull(rd, one[:]); m > 0 {
		return &lengthError{got: int64(n) + 1, want: int64(len(buf))}
	}
	return nil
}

// bufPool hands out at most max buffers of one size, allocated on first need.
type bufPool struct {
	size int
	max  int
	free chan []byte
	made chan struct{}
}

func newBufPool(size, max int) *bufPool {
	return &bufPool{size: size, max: max, free: make(chan []byte, max), made: make(chan struct{}, max)}
}

func (p *bufPool) get(ctx context.Context) ([]byte, error) {
	select {
	case b := <-p.free:
		return b, nil
	default:
	}
	select {
	case b := <-p.free:
		return b, nil
	case p.made <- struct{}{}:
		return make([]byte, p.size), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *bufPool) put(b []byte) { p.free <- b[:cap(b)] }
