package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/providers/checksum"
)

// Mode selects quick (metadata) or deep (every byte) verification.
type Mode string

const (
	ModeQuick Mode = "quick"
	ModeDeep  Mode = "deep"
)

// Defaults for zero Options fields.
const (
	// DefaultJobs bounds the requests and reads in flight.
	DefaultJobs = 16
	// DefaultRangeSize is the size of one ranged read in deep mode, when a file in the tail of a
	// deep verification is split into ranges read in parallel and hashed in order.
	DefaultRangeSize = 8 << 20
	// DefaultReadAttempts is how often deep mode tries one range before giving up on a file.
	DefaultReadAttempts = 3
	// DefaultRetryBackoff is the first pause between two attempts at a range (it doubles).
	DefaultRetryBackoff = 200 * time.Millisecond
	// MaxBuffers bounds the range buffers of deep mode however large Jobs is, so memory stays
	// at most MaxBuffers × RangeSize (32 MiB with the defaults) whatever the replica's size.
	// Files read whole need none: they stream through one small copy buffer each.
	MaxBuffers = 4
)

// Options tune a verification. The zero value is the production default.
type Options struct {
	// Jobs bounds the requests (list, stat, ranged read) in flight at once — in total across
	// replicas when given to Replicas. 0 means DefaultJobs.
	Jobs int
	// RangeSize is the size of one ranged read in deep mode (files are read whole, except in
	// the tail, where the last big files go on as ranges: see Deep); 0 means DefaultRangeSize.
	RangeSize int64
	// ReadAttempts is how many times deep mode tries a range (a reset connection, a truncated
	// body) before reporting the file as ERROR; the SDK's own retries come on top. 0 means
	// DefaultReadAttempts.
	ReadAttempts int
	// RetryBackoff is the first pause between attempts at a range; 0 means DefaultRetryBackoff.
	RetryBackoff time.Duration
	// Digest is the hash deep mode proves each file's bytes with. "" (the default) takes BLAKE3
	// where the manifest records it — every manifest Lifeboat builds — and SHA-256 elsewhere;
	// checksum.SHA256 re-derives the layer digest itself (an audit of the OCI identity), at
	// about 60 % of the speed per core.
	Digest checksum.Algorithm
	// StallTimeout, if set, tightens the stores' own stall guard for this verification
	// (providers.WithStallGuard): a read whose body delivers no byte for this long is abandoned
	// and retried. 0 keeps the guard each store got when it was opened.
	StallTimeout time.Duration
	// Planned, if set, is called in deep mode once per replica, after its listing, with the
	// number of bytes it is about to read (for a progress bar's total). Replicas calls it from
	// one goroutine per replica, so possibly concurrently.
	Planned func(bytes int64)
	// Progress, if set, is called in deep mode with the number of bytes hashed, as they are
	// hashed (never twice for a retried range). It is called from many goroutines at once and
	// must be safe for concurrent use.
	Progress func(bytes int64)
}

func (o Options) withDefaults() Options {
	if o.Jobs <= 0 {
		o.Jobs = DefaultJobs
	}
	if o.RangeSize <= 0 {
		o.RangeSize = DefaultRangeSize
	}
	if o.ReadAttempts <= 0 {
		o.ReadAttempts = DefaultReadAttempts
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = DefaultRetryBackoff
	}
	if o.Planned == nil {
		o.Planned = func(int64) {}
	}
	if o.Progress == nil {
		o.Progress = func(int64) {}
	}
	return o
}

// runner holds what concurrent verifications share: the request tokens, the deep files in
// progress and the range buffers. Tokens are held only for the duration of one request (or one
// listing) and never while waiting for another, so no set of verifications can deadlock.
type runner struct {
	o     Options
	sem   chan struct{} // request tokens (Jobs)
	files chan struct{} // deep files being read (Jobs)
	// pending counts the deep files listed but not yet started, across replicas: when it is 0
	// and few files are in flight, the rest of a big file is read as parallel ranges.
	pending atomic.Int64
	bufs    *bufPool
}

func newRunner(o Options) *runner {
	o = o.withDefaults()
	return &runner{
		o:     o,
		sem:   make(chan struct{}, o.Jobs),
		files: make(chan struct{}, o.Jobs),
		bufs:  newBufPool(int(o.RangeSize), max(2, min(o.Jobs, MaxBuffers))),
	}
}

func (r *runner) acquire(ctx context.Context) error {
	select {
	case r.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *runner) release() { <-r.sem }

// Quick verifies one replica from metadata: one listing of the bundle's prefix (model/, engine/
// and deploy/: one request per 1,000 objects), plus a Stat, all at once, of just the objects
// whose listing entry cannot prove them (on S3: an ETag that is not an MD5, or one that differs
// from the manifest's MD5 until a Stat shows the object is not SSE-KMS or SSE-C). Each manifest file comes out OK only when its size and a full-object native checksum
// equal the manifest's; MISSING, SIZE_MISMATCH, CHECKSUM_MISMATCH, UNVERIFIED (nothing
// comparable: composite checksums, no stored checksum, local files) or ERROR otherwise, and
// objects the manifest does not list are EXTRA. It never returns an error: a replica that cannot
// be listed is UNREACHABLE with Error, ErrorKind and Err set.
//
// Replicate uses it to plan a repair: ReplicaResult.ToRepair lists what to copy.
func Quick(ctx context.Context, m *manifest.Manifest, s providers.Store, o Options) ReplicaResult {
	return newRunner(o).replica(ctx, m, s, ModeQuick)
}

// Deep verifies one replica by reading every byte of every file whose size matches and comparing
// its BLAKE3 or SHA-256 (Options.Digest) with the manifest's: OK or CORRUPT (MISSING and SIZE_MISMATCH as Quick, without a
// read). Files are read whole, several at once (largest first, one request each), pinned to the
// listed revision. In the tail — every file started, few still in flight — the rest of a big file
// is read as parallel ranges of RangeSize hashed in order, so that the last shard does not crawl
// over one connection; memory stays bounded by MaxBuffers × RangeSize plus one copy buffer per
// file. Broken or short reads are retried ReadAttempts times, then the file is ERROR — never OK.
func Deep(ctx context.Context, m *manifest.Manifest, s providers.Store, o Options) ReplicaResult {
	return newRunner(o).replica(ctx, m, s, ModeDeep)
}

// Replicas verifies several replicas concurrently, sharing one bound of Options.Jobs requests in
// flight (and one pool of deep-read buffers). Results are in the order of stores.
func Replicas(ctx context.Context, m *manifest.Manifest, stores []providers.Store, mode Mode, o Options) *Report {
	run := NewRun(ctx, len(stores), mode, o)
	for i, s := range stores {
		run.Start(i, s)
	}
	return run.Finish(m)
}

// Run is a verification of several replicas (as Replicas) that starts before the manifest is at
// hand. A replica's listing does not depend on the manifest and is most of a quick verification
// — one round trip per 1,000 objects, 20 to 100 ms or more over a WAN — so a caller starts each
// listing as soon as its store is open (Start), overlapping it with reading and parsing the
// manifest and opening the other stores, and hands over the manifest when it has one (Finish).
// If the manifest or another store turns out to be bad input, Cancel stops the listings.
//
// A Run has one goroutine per started replica: it lists, then waits for Finish or Cancel.
type Run struct {
	r      *runner
	mode   Mode
	ctx    context.Context
	cancel context.CancelFunc
	// manifest is closed by Finish once m is set; stop by Cancel. A replica's goroutine waits for
	// either after its listing: not for ctx, which may end (--timeout, Ctrl-C) with results
	// still to report.
	manifest, stop chan struct{}
	m              *manifest.Manifest
	results        []ReplicaResult
	wg             sync.WaitGroup

	mu      sync.Mutex
	started []bool
	ended   bool // Finish or Cancel was called: Start does nothing more
}

// NewRun prepares the verification of n replicas, numbered 0 to n-1 in the order of the Report.
func NewRun(ctx context.Context, n int, mode Mode, o Options) *Run {
	ctx, cancel := context.WithCancel(ctx)
	return &Run{
		r: newRunner(o), mode: mode, ctx: ctx, cancel: cancel,
		manifest: make(chan struct{}), stop: make(chan struct{}),
		results: make([]ReplicaResult, n), started: make([]bool, n),
	}
}

// Start begins verifying replica i on s: its listing starts at once. Replicas may be started
// from several goroutines at once, each once; Start after Finish or Cancel does nothing.
func (v *Run) Start(i int, s providers.Store) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ended || v.started[i] {
		return
	}
	v.started[i] = true
	v.wg.Add(1)
	go func() {
		defer v.wg.Done()
		if v.r.o.StallTimeout > 0 {
			s = providers.WithStallGuard(s, v.r.o.StallTimeout)
		}
		l := v.r.listReplica(v.ctx, s)
		select {
		case <-v.manifest:
			v.results[i] = v.r.judge(v.ctx, v.m, s, v.mode, l)
		case <-v.stop:
		}
	}()
}

// Finish verifies every replica against m and returns the report. Every replica must have been
// started (Start returned) before: Finish panics otherwise, since a replica left out would
// silently pass.
func (v *Run) Finish(m *manifest.Manifest) *Report {
	v.mu.Lock()
	v.ended = true
	for i, ok := range v.started {
		if !ok {
			v.mu.Unlock()
			panic(fmt.Sprintf("verify: Run.Finish with replica %d of %d never started", i, len(v.started)))
		}
	}
	v.mu.Unlock()
	v.m = m
	close(v.manifest)
	v.wg.Wait()
	v.cancel()
	return &Report{Mode: string(v.mode), Replicas: v.results}
}

// Cancel abandons the verification (the manifest or a replica URL was bad input): it stops the
// listings under way and returns when they have ended. Once is enough; not after Finish.
func (v *Run) Cancel() {
	v.mu.Lock()
	if !v.ended {
		close(v.stop)
	}
	v.ended = true
	v.mu.Unlock()
	v.cancel()
	v.wg.Wait()
}

// listed is one replica's listing, taken before the manifest is needed.
type listed struct {
	start    time.Time
	objs     map[string]providers.Object
	warnings []string
	err      error
}

// listReplica lists one store for a verification (see list).
func (r *runner) listReplica(ctx context.Context, s providers.Store) listed {
	l := listed{start: time.Now()}
	l.objs, l.warnings, l.err = r.list(ctx, s)
	return l
}

// replica verifies one store.
func (r *runner) replica(ctx context.Context, m *manifest.Manifest, s providers.Store, mode Mode) ReplicaResult {
	if r.o.StallTimeout > 0 {
		s = providers.WithStallGuard(s, r.o.StallTimeout)
	}
	return r.judge(ctx, m, s, mode, r.listReplica(ctx, s))
}

// judge compares a replica's listing with the manifest, reading (deep) or stat'ing (quick) the
// files the listing cannot settle.
func (r *runner) judge(ctx context.Context, m *manifest.Manifest, s providers.Store, mode Mode, l listed) ReplicaResult {
	start, listing := l.start, l.objs
	res := ReplicaResult{URL: s.String()}
	res.Warnings = l.warnings
	if err := l.err; err != nil {
		res.Files = make([]FileResult, 0, len(m.Files))
		for _, f := range m.Files {
			res.Files = append(res.Files, FileResult{
				Path: f.Path, Status: StatusError, Expected: expectedFacts(f, Facts{}),
				Detail: "not checked: the replica could not be listed",
			})
		}
		res.setError(err, "")
		res.finish(start)
		return res
	}

	files := make([]FileResult, len(m.Files))
	errs := make([]error, len(m.Files))
	switch mode {
	case ModeDeep:
		r.deepFiles(ctx, m, s, listing, files, errs, &res)
	default:
		r.quickFiles(ctx, m, s, listing, files, errs)
	}
	for _, err := range errs {
		if err != nil {
			n := 0
			for _, e := range errs {
				if e != nil {
					n++
				}
			}
			res.setError(err, fmt.Sprintf("%d file(s) could not be checked; first: ", n))
			break
		}
	}

	// Whatever the listing holds beyond the manifest is EXTRA.
	for _, f := range m.Files {
		delete(listing, f.Path)
	}
	for _, obj := range listing {
		size := obj.Size
		files = append(files, FileResult{
			Path: obj.Key, Status: StatusExtra,
			Actual: Facts{Size: &size, Source: "listing"},
			Detail: "in the replica, not in the manifest",
		})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	res.Files = files
	res.finish(start)
	if res.Counts[StatusMissing] == len(m.Files) && len(m.Files) > 0 {
		res.Diagnosis = diagnose(ctx, s)
	}
	return res
}

// diagnose says what a prefix holds when nothing of the manifest is there: usually the wrong
// level (the model directory itself, or the parent of the bundle) or a prefix typo.
func diagnose(ctx context.Context, s providers.Store) string {
	top := map[string]bool{}
	nested := ""
	errStop := errors.New("enough")
	err := s.List(ctx, "", func(o providers.Object) error {
		first, rest, _ := strings.Cut(o.Key, "/")
		top[first] = true
		if sub, _, ok := strings.Cut(rest, "/"); ok && (sub == "model" || sub == "engine") && nested == "" {
			nested = first
		}
		if len(top) > 50 {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) && !errors.Is(err, providers.ErrInvalidKey) {
		return ""
	}
	names := make([]string, 0, len(top))
	for n := range top {
		names = append(names, n)
	}
	sort.Strings(names)
	const head = "nothing of the manifest exists under this prefix"
	switch {
	case len(names) == 0:
		return head + ", which is empty: check the prefix for a typo"
	case top["config.json"] || top["tokenizer.json"]:
		return head + ": it holds a model repository itself (config.json at the top), not a DR bundle — give the directory that holds model/, engine/ and deploy/ (the parent directory?), or use 'manifest lint --model' for a repository"
	case nested != "":
		return head + ": a bundle seems to be one level down, under " + nested + "/ — did you mean that prefix?"
	}
	if len(names) > 10 {
		names = append(names[:10], "…")
	}
	return head + "; it holds: " + strings.Join(names, ", ") + " — no model/, engine/ or deploy/: check the prefix"
}

// bundleDirs are the directories of a DR bundle; a replica URL names the prefix holding them.
var bundleDirs = []string{
	manifest.PartModel.Prefix(), manifest.PartEngine.Prefix(), manifest.PartDeployment.Prefix(),
}

// maxForeign is how many objects outside the bundle directories list tolerates in its one
// listing of the whole prefix before it lists the directories on their own instead: one page.
const maxForeign = 1000

// errForeign stops a listing of the prefix that holds much besides the bundle.
var errForeign = errors.New("the prefix holds much besides the bundle")

// list returns the objects of the bundle directories by key, and warnings about objects with
// invalid names. Over a WAN the request count is the speed, so a clean replica costs one listing
// of the whole prefix — one page per 1,000 objects — keeping what lies under model/, engine/ and
// deploy/. Only when the prefix also holds more than maxForeign other objects (a bundle at a
// bucket's root, next to much else) is that listing abandoned for one listing per directory,
// concurrently, so that the others are not paged through. A listing is retried by the SDK, per
// request, and by no one else: a burst of 503s that outlasts those attempts is an UNREACHABLE
// store, said after one layer's retries, not after their product.
func (r *runner) list(ctx context.Context, s providers.Store) (map[string]providers.Object, []string, error) {
	out := map[string]providers.Object{}
	crowded := false
	err := r.retry(ctx, func() error {
		clear(out)
		foreign := 0
		err := s.List(ctx, "", func(o providers.Object) error {
			if inBundle(o.Key) {
				out[o.Key] = o
			} else if foreign++; foreign > maxForeign {
				return errForeign
			}
			return nil
		})
		if errors.Is(err, errForeign) {
			crowded = true
			return nil
		}
		return err
	})
	if !crowded {
		warnings, err := invalidKeys("", err)
		return out, warnings, err
	}
	var (
		mu       sync.Mutex
		warnings []string
		firstErr error
		wg       sync.WaitGroup
	)
	clear(out)
	for _, dir := range bundleDirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got []providers.Object
			err := r.retry(ctx, func() error {
				got = got[:0]
				return s.List(ctx, dir[:len(dir)-1], func(o providers.Object) error {
					got = append(got, o)
					return nil
				})
			})
			mu.Lock()
			for _, o := range got {
				out[o.Key] = o
			}
			mu.Unlock()
			w, err := invalidKeys(dir, err)
			mu.Lock()
			defer mu.Unlock()
			warnings = append(warnings, w...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	sort.Strings(warnings)
	return out, warnings, firstErr
}

// invalidKeys turns a listing's invalid-key error into a warning (the listing went on past them).
func invalidKeys(where string, err error) ([]string, error) {
	var ike *providers.InvalidKeysError
	if !errors.As(err, &ike) {
		return nil, err
	}
	if where == "" {
		where = "the replica"
	}
	return []string{fmt.Sprintf("%s: %d object(s) with invalid names were not checked, e.g. %q", where, ike.Count, ike.Examples)}, nil
}

// inBundle reports whether key lies in one of the bundle directories.
func inBundle(key string) bool {
	for _, dir := range bundleDirs {
		if strings.HasPrefix(key, dir) {
			return true
		}
	}
	return false
}

// setError records why (part of) the replica could not be checked.
func (res *ReplicaResult) setError(err error, prefix string) {
	kind := classify(err)
	res.Err, res.ErrorKind = err, kind
	what := map[ErrorKind]string{
		ErrorUnreachable:   "unreachable after retries: ",
		ErrorTimeout:       "timed out: ",
		ErrorPermission:    "permission denied (check the credentials and the access policy): ",
		ErrorMisconfigured: "misconfigured: ",
		ErrorNotFound:      "bucket, container or directory not found: ",
		ErrorCanceled:      "interrupted: ",
		ErrorOther:         "",
	}[kind]
	res.Error = providers.Redact(prefix + what + err.Error())
}

// classify maps an error onto an ErrorKind: providers' one classification.
func classify(err error) ErrorKind {
	switch k := providers.KindOf(err); k {
	case providers.KindNone:
		return ""
	case providers.KindCanceled, providers.KindUnreachable, providers.KindTimeout, providers.KindDenied,
		providers.KindMisconfigured, providers.KindNotFound:
		return ErrorKind(k)
	}
	return ErrorOther
}

// finish fills the counts and the replica status.
func (res *ReplicaResult) finish(start time.Time) {
	res.finishCounts()
	res.Seconds = time.Since(start).Seconds()
}

// finishCounts fills the counts and the replica status from the files and the error.
func (res *ReplicaResult) finishCounts() {
	res.Counts = map[Status]int{}
	for _, s := range []Status{StatusOK, StatusMissing, StatusSizeMismatch, StatusChecksumMismatch,
		StatusUnverified, StatusCorrupt, StatusExtra, StatusError} {
		res.Counts[s] = 0
	}
	failed := false
	for _, f := range res.Files {
		res.Counts[f.Status]++
		failed = failed || f.Status.Failed()
	}
	switch {
	case failed:
		res.Status = ReplicaFailed
	case res.Error != "" || res.Counts[StatusError] > 0:
		res.Status = map[ErrorKind]ReplicaStatus{
			ErrorNotFound: ReplicaNotFound, ErrorPermission: ReplicaDenied, ErrorMisconfigured: ReplicaMisconfigured,
			ErrorOther: ReplicaError,
		}[res.ErrorKind]
		if res.Status == "" {
			res.Status = ReplicaUnreachable
		}
	case res.Counts[StatusUnverified] > 0:
		res.Status = ReplicaUnverified
	default:
		res.Status = ReplicaOK
	}
}

// statAddsChecksums reports whether a Stat can show checksums a listing entry cannot (S3:
// HeadObject's CRC64NVME/CRC32/CRC32C/SHA-256 against the listing's ETag). On GCS and Azure the
// listing already carries everything a Stat would.
func statAddsChecksums(c providers.Capabilities) bool {
	for _, a := range c.WriteChecksums {
		if !slices.Contains(c.ListChecksums, a) {
			return true
		}
	}
	return false
}

// quickFiles judges every manifest file from the listing, then stats those it cannot prove.
func (r *runner) quickFiles(ctx context.Context, m *manifest.Manifest, s providers.Store, listing map[string]providers.Object, files []FileResult, errs []error) {
	caps := s.Capabilities()
	var stat []int
	for i, f := range m.Files {
		obj, ok := listing[f.Path]
		if !ok {
			files[i] = missing(f, "listing")
			continue
		}
		fr, need := judgeQuick(f, obj, "listing", caps)
		if caps.ListFromIndex && !obj.Confirmed {
			// The entry is the index's word (a registry's manifest), not the object's: never OK
			// before a Stat (a HEAD of the blob) has seen it. Until then it is UNVERIFIED. (An
			// entry the store itself committed or found since it was opened is Confirmed.)
			need = true
			if fr.Status == StatusOK {
				fr.Status = StatusUnverified
				fr.Detail = "listed by the index, not yet stat'ed"
			}
		}
		files[i] = fr
		if need {
			stat = append(stat, i)
		}
	}
	var wg sync.WaitGroup
	for _, i := range stat {
		if err := r.acquire(ctx); err != nil {
			files[i], errs[i] = errorResult(m.Files[i], files[i], err), err
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			obj, err := s.Stat(ctx, m.Files[i].Path)
			r.release()
			switch {
			case errors.Is(err, providers.ErrNotFound):
				files[i] = missing(m.Files[i], "stat")
				files[i].Detail = "listed, then gone when stat'ed"
				if caps.ListFromIndex {
					files[i].Detail = "named in the index (the registry's manifest), but the object is gone: its stat (a HEAD of the blob) answered not found"
				}
			case err != nil:
				files[i], errs[i] = errorResult(m.Files[i], files[i], err), err
			default:
				files[i], _ = judgeQuick(m.Files[i], obj, "stat", caps)
			}
		}()
	}
	wg.Wait()
}

// errorResult turns a file's verdict into ERROR, keeping what was already known.
func errorResult(f manifest.File, prev FileResult, err error) FileResult {
	prev.Path = f.Path
	prev.Status = StatusError
	prev.Expected = expectedFacts(f, prev.Actual)
	prev.Detail = "could not be checked: " + err.Error()
	return prev
}

// counter counts bytes from many goroutines.
type counter struct{ n atomic.Int64 }
