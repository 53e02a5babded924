package replicate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"lifeboat/internal/base/wait"
	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/providers/checksum"
	"lifeboat/verify"

	"golang.org/x/sync/errgroup"
)

// Run copies into a target replica every file of a manifest that the target lacks or holds
// wrong, from a source replica (or, for engine and deployment files, from the bytes embedded in the
// manifest), and nothing else:
//
//   - Plan. The target is verified with verify.Quick (or verify.Deep, with Options.Deep), the same
//     verification 'lifeboat verify' runs, so there is one meaning of OK. OK files are left alone; MISSING, SIZE_MISMATCH, CHECKSUM_MISMATCH and ERROR files are
//     copied. UNVERIFIED files (same size, no comparable native checksum) are copied again when
//     the target records a native checksum on write (S3, GCS, Azure: the copy is then
//     quick-verifiable forever after); on a target that records none (file://), copying would
//     prove nothing new, so they are re-read and re-hashed instead (verify.Deep), and copied only if
//     they differ. With Deep, CORRUPT files (bytes that rotted under intact metadata) are copied
//     too. EXTRA files are reported and left alone.
//   - Source check. The planned files are verified quickly on the source too: a file the source
//     lacks, or holds with the wrong size or checksum, fails at once with that reason and is never
//     read — unless the manifest embeds its bytes (engine and small deployment files), which are
//     then written from the manifest. Embedded files are always written from the manifest: their
//     bytes are proven by its digest and need no read.
//   - Copy. Each file streams from the source straight into Store.Write with the manifest's size,
//     SHA-256 and the checksums the target keeps natively (writeSums), so a byte that differs
//     commits nothing, and the store records its native
//     full-object checksum. No partial object ever appears under a final name; an interrupted run
//     leaves every object either old or complete, so running again resumes. Up to Jobs files at
//     once. Broken connections and bodies are retried by the stores (providers/retry.go); a copy
//     whose bytes arrived cleanly but short or altered (a proxy that cut a body at a clean end,
//     a checksum the target rejected) is tried again, Attempts times in all. A source whose
//     bytes, read whole, do not match the manifest fails that file and is not retried.
//   - Check. The target is verified quickly again (if anything was written) and the result
//     returned in Target; Status comes from that check alone. With Deep, a registry target is
//     re-read (verify.Deep) instead: a registry keeps the blob it has for a digest, so an upload
//     does not replace bytes rotted on its storage, and a HEAD cannot tell.
//
// An error is returned only when the target (or, with something to copy, the source) cannot be
// listed at all; per-file failures are in the report.
func Run(ctx context.Context, m *manifest.Manifest, from, to providers.Store, o Options) (*Report, error) {
	start := time.Now()
	if o.StallTimeout > 0 {
		from = providers.WithStallGuard(from, o.StallTimeout)
	}
	r := &replicator{m: m, from: from, to: to, o: o.withDefaults(), rereadOK: map[string]bool{}}
	rep := &Report{From: from.String(), To: to.String(), DryRun: o.DryRun, Files: []CopyResult{}, Extra: []string{}}
	defer func() { rep.Seconds = time.Since(start).Seconds() }()

	var tgt verify.ReplicaResult
	var err error
	if o.Deep {
		tgt, err = r.deep(ctx, m, to)
	} else {
		tgt, err = r.quick(ctx, m, to)
	}
	if err != nil && o.DryRun && o.CreatesTarget && errors.Is(err, providers.ErrNotFound) {
		// The real run creates the target (a local directory): plan it as empty.
		tgt, err = verify.ReplicaResult{URL: to.String()}, nil
		for _, f := range m.Files {
			tgt.Files = append(tgt.Files, verify.FileResult{Path: f.Path, Status: verify.StatusMissing})
		}
	}
	if err != nil {
		rep.Status = statusForError(err)
		return rep, r.interrupted(rep, fmt.Errorf("target: %w", err))
	}
	if err := r.plan(ctx, rep, tgt); err != nil {
		rep.Status = statusForError(err)
		return rep, r.interrupted(rep, err)
	}
	if err := r.checkSource(ctx, rep.Files); err != nil {
		rep.Status = statusForError(err)
		return rep, r.interrupted(rep, fmt.Errorf("source: %w", err))
	}
	if o.DryRun {
		rep.Status = Planned
		for _, c := range rep.Files {
			if c.Outcome == OutcomeFailed {
				rep.Failed++
				rep.Status = Failed
			}
		}
		return rep, nil
	}
	r.sweep(ctx, rep, start.Add(-StaleAfter)) // a killed run's debris (temp files, multipart uploads)
	r.copyAll(ctx, rep)
	if err := ctx.Err(); err != nil {
		rep.Status = Interrupted
		return rep, r.interrupted(rep, err)
	}

	// Check the result (nothing written: the plan's verification still holds).
	after := tgt
	switch {
	case rep.Copied > 0 && o.Deep && providers.IsRegistry(to):
		after, err = r.reread(ctx, m, to)
	case rep.Copied > 0:
		after, err = r.quick(ctx, m, to)
	}
	rep.Target = &after
	if err != nil {
		rep.Status = statusForError(err)
		return rep, fmt.Errorf("target after copying: %w", err)
	}
	rep.Status = r.verdict(rep, after)
	if rep.Status == OK {
		// Every manifest file is proven intact: an upload begun before this run can only be a
		// superseded one (a killed run's, or a slower concurrent run's, which then retries).
		r.sweep(ctx, rep, start)
	}
	return rep, nil
}

// StaleAfter is the age past which Lifeboat's own incomplete uploads and temporary files in a
// target are removed when a run starts; a file store's temporary files of processes that are
// gone are removed at any age.
const StaleAfter = 24 * time.Hour

// sweep removes the target's debris older than before (providers.Sweeper) and adds it to the
// report; a failure to sweep is logged, it does not fail the run.
func (r *replicator) sweep(ctx context.Context, rep *Report, before time.Time) {
	sw, ok := providers.AsSweeper(r.to)
	if !ok {
		return
	}
	got, err := sw.Sweep(ctx, before)
	if err != nil {
		r.o.Log.Warn("sweeping stale temporary files and uploads", "target", r.to.String(), "err", err)
	}
	if rep.Swept == nil {
		rep.Swept = &providers.Swept{}
	}
	rep.Swept.Removed += got.Removed
	rep.Swept.Bytes += got.Bytes
	rep.Swept.Left = got.Left
	if got.Removed > 0 {
		r.o.Log.Info("removed stale debris of earlier runs", "target", r.to.String(), "removed", got.Removed, "bytes", got.Bytes)
	}
}

// plan turns the target's verdicts into rep.Files (what to copy), rep.Extra and the counts of
// files proven intact; files without a comparable checksum on a target that records none are
// re-read first.
func (r *replicator) plan(ctx context.Context, rep *Report, tgt verify.ReplicaResult) error {
	var reread []manifest.File
	writesChecksums := len(r.to.Capabilities().WriteChecksums) > 0
	for _, fr := range tgt.Files {
		f, inManifest := r.m.File(fr.Path)
		switch {
		case fr.Status == verify.StatusExtra || !inManifest:
			rep.Extra = append(rep.Extra, fr.Path)
		case fr.Status == verify.StatusOK && r.o.Deep:
			r.rereadOK[fr.Path] = true
		case fr.Status == verify.StatusOK:
			rep.AlreadyOK++
		case fr.Status == verify.StatusUnverified && !writesChecksums:
			reread = append(reread, f)
		default:
			rep.Files = append(rep.Files, r.planned(f, fr.Status, fr.Detail))
		}
	}
	if len(reread) > 0 {
		var total int64
		for _, f := range reread {
			total += f.Size
		}
		r.addTotal(len(reread), total)
		rep.Files = append(rep.Files, r.rereadAll(ctx, reread)...)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	rep.RereadOK = len(r.rereadOK)
	sort.Slice(rep.Files, func(i, j int) bool { return rep.Files[i].Path < rep.Files[j].Path })
	return nil
}

// copyAll copies the planned files, Jobs at a time, and counts the outcomes. OnFile is called
// for every file of the plan, one call at a time (for a batching target, after the commit).
func (r *replicator) copyAll(ctx context.Context, rep *Report) {
	var total int64
	n := 0
	for _, c := range rep.Files {
		if c.Outcome == OutcomePlanned {
			total += c.Size
			n++
		}
	}
	r.addTotal(n, total)
	// A batching target (a restore's directory) makes its copies durable and visible only at
	// the commit: a copy is reported done after it, never before.
	_, batching := providers.AsCommitter(r.to)
	var g errgroup.Group
	g.SetLimit(r.o.Jobs)
	// Largest first: the big files set the length of the run, so they start at once and the small
	// ones fill the other slots beside them, instead of the big ones starting last, after every
	// small file before them in path order (a registry push of a 64 MiB bundle: ~20 % faster).
	order := make([]int, len(rep.Files))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rep.Files[order[a]].Size > rep.Files[order[b]].Size })
	for _, i := range order {
		c := &rep.Files[i]
		if c.Outcome != OutcomePlanned {
			r.onFile(*c)
			continue
		}
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			r.copyFile(ctx, c)
			if !batching {
				r.onFile(*c)
			}
			return nil
		})
	}
	g.Wait()
	r.commit(ctx, rep)
	if batching {
		for _, i := range order {
			if c := rep.Files[i]; c.Attempts > 0 {
				r.onFile(c)
			}
		}
	}
	for _, c := range rep.Files {
		switch c.Outcome {
		case OutcomeCopied:
			rep.Copied++
			rep.Bytes += c.Size
		case OutcomeFailed:
			rep.Failed++
		}
	}
}

// commit makes a batching target's copies durable and visible (providers.Committer: a restore's
// directory). It runs also when the run was interrupted, so that every copy that finished is
// kept and a second run resumes after it. A copy whose commit failed is failed (a local write).
func (r *replicator) commit(ctx context.Context, rep *Report) {
	c, ok := providers.AsCommitter(r.to)
	if !ok {
		return
	}
	failed := c.Commit(ctx)
	for i := range rep.Files {
		f := &rep.Files[i]
		if err, bad := failed[f.Path]; bad && f.Outcome == OutcomeCopied {
			f.Outcome, f.Failure, f.Error = OutcomeFailed, FailLocalWrite, err.Error()
			r.progress(-f.Size)
		}
	}
}

// onFile calls Options.OnFile, serialised.
func (r *replicator) onFile(c CopyResult) {
	if r.o.OnFile == nil {
		return
	}
	r.onFileMu.Lock()
	defer r.onFileMu.Unlock()
	r.o.OnFile(c)
}

// Options tune Run and Restore. The zero value is the CLI's default.
type Options struct {
	// DryRun plans (reading the target and the source's metadata, and re-reading UNVERIFIED files
	// of a target without native checksums) and writes nothing.
	DryRun bool
	// CreatesTarget says the run creates a missing target (a local directory), so a dry run
	// plans a target that does not exist yet as an empty one instead of failing.
	CreatesTarget bool
	// Deep plans from a deep verification of the target (every byte re-read and hashed) instead
	// of a quick one, so that bytes that rotted under intact metadata (a stored checksum that
	// still describes what was written) are found and copied again.
	Deep bool
	// Jobs is the number of files copied (or re-read) at once; 0 means DefaultJobs.
	Jobs int
	// Attempts is how many times a copy is tried when its bytes arrived short or altered in
	// transit; 0 means 3. (A broken connection is the stores' to retry.)
	Attempts int
	// Backoff is the wait before the second attempt, doubled before each further one; 0 means 1 s.
	Backoff time.Duration
	// StallTimeout, if set, tightens the source store's own stall guard
	// (providers.WithStallGuard): an attempt whose source delivers no byte for this long (a
	// connection that hangs, an SDK that keeps reopening a body that keeps breaking) is abandoned
	// and counts as unreachable. Time the target spends taking the bytes does not count. 0 keeps
	// the guard the source got when it was opened.
	StallTimeout time.Duration
	// Progress, if set, is called with the bytes that pass (copied or re-read), negative to take
	// back the bytes of an attempt that failed. It is called from many goroutines at once.
	Progress func(n int64)
	// Total, if set, is called with the files and bytes still to move whenever the plan grows,
	// possibly from several goroutines at once.
	Total func(files, bytes int64)
	// OnFile, if set, is called as each planned file is done (copied, failed or skipped), one
	// call at a time (never concurrently), from the copying goroutines; into a batching target (a
	// restore's directory) after the commit that makes the copies durable and visible, so that
	// "copied" is never said of a file not yet under its name.
	OnFile func(CopyResult)
	Log    *slog.Logger
	// Trust, for Restore only: the manifest's signature is enforced before anything is written
	// (see Trust); nil: none.
	Trust *Trust
}

// DefaultJobs is the default number of files copied at once. Each copy holds at most
// (Options.Concurrency+1) × Options.PartSize of the target store in memory (40 MiB by default).
const DefaultJobs = 4

func (o Options) withDefaults() Options {
	if o.Jobs <= 0 {
		o.Jobs = DefaultJobs
	}
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Status sums up a replicate run.
type Status string

const (
	OK          Status = "OK"          // every manifest file is proven intact in the target
	Planned     Status = "PLANNED"     // dry run: the plan can be carried out
	Failed      Status = "FAILED"      // some file could not be repaired (source corrupt or missing, …)
	Unreachable Status = "UNREACHABLE" // a store stayed unreachable after retries
	// Interrupted: the run was cancelled (Ctrl-C, SIGTERM, a deadline) before it ended. Every
	// object is either old or complete; running again resumes. Run returns ErrInterrupted.
	Interrupted Status = "INTERRUPTED"
	// WriteFailed: the target could not be written on this host (disk full, read-only, a path
	// in the way); the replica and the network are not at fault.
	WriteFailed Status = "WRITE_FAILED"
)

// ErrInterrupted is matched (errors.Is) by the error of a run that was cancelled; it also
// wraps the context's error.
var ErrInterrupted = errors.New("interrupted")

// interrupted turns err into the run's interruption error when ctx ended it, naming how far
// the run got; otherwise err is returned as is.
func (r *replicator) interrupted(rep *Report, err error) error {
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	rep.Status = Interrupted
	done := 0
	for _, c := range rep.Files {
		if c.Outcome == OutcomeCopied {
			done++
		}
	}
	return fmt.Errorf("%w: %d of %d planned file(s) copied before it stopped; nothing partial is left under a final name, run again to resume: %w",
		ErrInterrupted, done, len(rep.Files), err)
}

// CopyOutcome is what happened to one planned file.
type CopyOutcome string

const (
	OutcomePlanned CopyOutcome = "planned" // dry run, or not reached
	OutcomeCopied  CopyOutcome = "copied"
	OutcomeFailed  CopyOutcome = "failed"
)

// CopyFrom says where a file's bytes come from.
type CopyFrom string

const (
	FromSource   CopyFrom = "source"
	FromManifest CopyFrom = "manifest" // embedded in the manifest (engine, small deployment and model config files)
)

// FailureKind classifies a failed copy.
type FailureKind string

const (
	FailSourceMissing FailureKind = "source-missing" // the source lacks the file
	FailSourceCorrupt FailureKind = "source-corrupt" // the source's size, checksum or bytes differ from the manifest
	FailUnreachable   FailureKind = "unreachable"    // a store kept failing after every attempt
	FailLocalWrite    FailureKind = "local-write"    // writing the target on this host failed (disk full, read-only, a path in the way)
	FailError         FailureKind = "error"          // anything else (permission, invalid key, …)
)

// CopyResult is one file of the plan.
type CopyResult struct {
	Path string `json:"path"`
	// Reason is the target's verdict that put the file in the plan: MISSING, SIZE_MISMATCH,
	// CHECKSUM_MISMATCH, UNVERIFIED, CORRUPT (re-read and found different) or ERROR.
	Reason verify.Status `json:"reason"`
	// Detail explains Reason (expected vs actual).
	Detail   string      `json:"detail,omitempty"`
	Size     int64       `json:"size"`
	From     CopyFrom    `json:"from"`
	Outcome  CopyOutcome `json:"outcome"`
	Failure  FailureKind `json:"failure,omitempty"`
	Error    string      `json:"error,omitempty"`
	Attempts int         `json:"attempts,omitempty"`
}

// Report is the result of Run.
type Report struct {
	From   string `json:"from"`
	To     string `json:"to"`
	DryRun bool   `json:"dry_run"`
	Status Status `json:"status"`
	// Files is the plan, in path order, with each file's outcome.
	Files []CopyResult `json:"files"`
	// Extra are target files the manifest does not list; they are left alone.
	Extra []string `json:"extra"`
	// AlreadyOK counts files the target's native checksums proved intact; RereadOK those without
	// one that were re-read and found intact. Neither was copied.
	AlreadyOK int   `json:"already_ok"`
	RereadOK  int   `json:"reread_ok"`
	Copied    int   `json:"copied"`
	Failed    int   `json:"failed"`
	Bytes     int64 `json:"bytes_copied"`
	// Target is the quick verification of the target after copying (absent for dry runs).
	Target *verify.ReplicaResult `json:"target,omitempty"`
	// Unproven lists manifest files that, after the run, are neither OK by the target's native
	// checksums nor written or re-read by this run (someone else changed the target meanwhile).
	Unproven []string `json:"unproven,omitempty"`
	// Swept is what this run removed of earlier runs' debris in the target (temporary files,
	// incomplete multipart uploads) and what it left as possibly another run's; nil when the
	// target keeps none or nothing was written.
	Swept   *providers.Swept `json:"swept,omitempty"`
	Seconds float64          `json:"seconds"`
}

type replicator struct {
	m        *manifest.Manifest
	from, to providers.Store
	o        Options

	totalFiles atomic.Int64
	totalBytes atomic.Int64
	rereadOK   map[string]bool // files of the target re-read and found intact (deep OK)
	onFileMu   sync.Mutex
}

// quick is verify.Quick, with a replica that could not be listed at all turned into an error.
func (r *replicator) quick(ctx context.Context, m *manifest.Manifest, s providers.Store) (verify.ReplicaResult, error) {
	return r.listed(ctx, m, verify.Quick(ctx, m, s, verify.Options{}))
}

// deep is verify.Deep, likewise; the bytes it reads count as progress.
func (r *replicator) deep(ctx context.Context, m *manifest.Manifest, s providers.Store) (verify.ReplicaResult, error) {
	res := verify.Deep(ctx, m, s, verify.Options{Jobs: r.o.Jobs, Progress: r.progress, Planned: func(n int64) { r.addTotal(0, n) }})
	return r.listed(ctx, m, res)
}

// reread is verify.Deep after copying, for a target whose writes cannot replace bytes it holds
// (a registry): the files' bytes are read again, not counted as progress.
func (r *replicator) reread(ctx context.Context, m *manifest.Manifest, s providers.Store) (verify.ReplicaResult, error) {
	return r.listed(ctx, m, verify.Deep(ctx, m, s, verify.Options{Jobs: r.o.Jobs}))
}

// listed turns a verification of a replica that could not be listed into an error.
func (r *replicator) listed(ctx context.Context, m *manifest.Manifest, res verify.ReplicaResult) (verify.ReplicaResult, error) {
	if res.Err == nil {
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	for _, fr := range res.Files {
		if fr.Status != verify.StatusError && fr.Status != verify.StatusExtra {
			return res, nil // listed: the files that could not be stat'ed are planned as ERROR
		}
	}
	if len(m.Files) == 0 {
		return res, nil
	}
	return res, res.Err
}

func (r *replicator) addTotal(files int, n int64) {
	f := r.totalFiles.Add(int64(files))
	b := r.totalBytes.Add(n)
	if r.o.Total != nil {
		r.o.Total(f, b)
	}
}

func (r *replicator) progress(n int64) {
	if r.o.Progress != nil && n != 0 {
		r.o.Progress(n)
	}
}

func (r *replicator) planned(f manifest.File, reason verify.Status, detail string) CopyResult {
	c := CopyResult{Path: f.Path, Reason: reason, Detail: detail, Size: f.Size, From: FromSource, Outcome: OutcomePlanned}
	if f.Data != nil {
		c.From = FromManifest
	}
	return c
}

// rereadAll deep-verifies files of a target without native checksums; those that are not OK
// (CORRUPT, or gone, or unreadable) join the plan.
func (r *replicator) rereadAll(ctx context.Context, files []manifest.File) []CopyResult {
	sub := &manifest.Manifest{OCI: r.m.OCI, Model: r.m.Model, Files: files}
	res := verify.Deep(ctx, sub, r.to, verify.Options{Jobs: r.o.Jobs, Progress: r.progress})
	var out []CopyResult
	for _, fr := range res.Files {
		f, ok := sub.File(fr.Path)
		switch {
		case !ok:
		case fr.Status == verify.StatusOK:
			r.rereadOK[f.Path] = true
		default:
			out = append(out, r.planned(f, fr.Status, fr.Detail))
		}
	}
	return out
}

// checkSource verifies quickly, on the source, the planned files it has to provide, and fails at
// once those it lacks or holds wrong.
func (r *replicator) checkSource(ctx context.Context, plan []CopyResult) error {
	idx := map[string]int{}
	var files []manifest.File
	for i, c := range plan {
		if c.From != FromSource {
			continue
		}
		f, _ := r.m.File(c.Path)
		idx[c.Path] = i
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil
	}
	sub := &manifest.Manifest{OCI: r.m.OCI, Model: r.m.Model, Files: files}
	res, err := r.quick(ctx, sub, r.from)
	if err != nil {
		return err
	}
	for _, fr := range res.Files {
		i, ok := idx[fr.Path]
		if !ok {
			continue // EXTRA on the source: not our concern
		}
		c := &plan[i]
		switch fr.Status {
		case verify.StatusMissing:
			c.Outcome, c.Failure = OutcomeFailed, FailSourceMissing
			c.Error = fmt.Sprintf("missing from the source %s", r.from)
		case verify.StatusSizeMismatch, verify.StatusChecksumMismatch:
			c.Outcome, c.Failure = OutcomeFailed, FailSourceCorrupt
			c.Error = fmt.Sprintf("the source's copy is corrupt (%s); repair the source or replicate from another replica", fr.Detail)
		}
	}
	return nil
}

// copyFile copies one planned file, retrying transient failures.
func (r *replicator) copyFile(ctx context.Context, c *CopyResult) {
	f, _ := r.m.File(c.Path)
	pause := r.o.Backoff
	var err error
	for attempt := 1; ; attempt++ {
		c.Attempts = attempt
		err = r.copyOnce(ctx, f, c.From)
		if err == nil {
			c.Outcome, c.Failure, c.Error = OutcomeCopied, "", ""
			msg := "copied"
			if _, batching := providers.AsCommitter(r.to); batching {
				msg = "copied, to be committed with the others" // fsync and rename come at the end
			}
			r.o.Log.Debug(msg, "path", f.Path, "bytes", f.Size, "attempts", attempt)
			return
		}
		kind := failureKind(err)
		if attempt >= r.o.Attempts || !retryable(ctx, err, kind) {
			break
		}
		r.o.Log.Warn("copy failed, trying again", "path", f.Path, "attempt", attempt, "err", err)
		_ = wait.Sleep(ctx, pause) // as before: cancelled, the next attempt fails fast and ends the loop
		pause *= 2
	}
	c.Outcome, c.Failure, c.Error = OutcomeFailed, failureKind(err), err.Error()
	if ctx.Err() != nil {
		c.Outcome, c.Failure, c.Error = OutcomePlanned, "", "" // interrupted: not attempted to the end
	}
}

// copyOnce streams one file into the target. A retried Read of the source calls the callback again:
// each call starts a fresh Write (the failed one committed nothing). The source's stall guard
// ends an attempt whose source delivers nothing (providers.ErrStalled, unreachable).
func (r *replicator) copyOnce(ctx context.Context, f manifest.File, from CopyFrom) error {
	opts := providers.WriteOptions{Size: f.Size, Checksums: r.writeSums(f)}
	if from == FromManifest {
		pr := &progressReader{r: bytes.NewReader(f.Data), add: r.progress}
		_, err := r.to.Write(ctx, f.Path, pr, opts)
		if err != nil {
			r.progress(-pr.n)
		}
		return err
	}
	// Two repositories of one registry: the registry copies the blob itself (a mount).
	if mounted, err := providers.Mount(ctx, r.to, r.from, f.Path, opts); err != nil || mounted {
		if mounted {
			r.progress(f.Size)
		}
		return err
	}
	var tap *sourceTap
	err := r.from.Read(ctx, f.Path, providers.ReadOptions{}, func(rd io.Reader) error {
		if tap != nil {
			r.progress(-tap.n) // the store retries from the start
		}
		tap = newSourceTap(rd, f, r.progress)
		_, err := r.to.Write(ctx, f.Path, tap, opts)
		return err
	})
	if err == nil {
		return nil
	}
	if tap != nil {
		r.progress(-tap.n)
		if cerr := tap.corrupt(f); cerr != nil {
			return cerr
		}
	}
	return err
}

// writeSums are the checksums a copy into the target is checked against as it streams: the
// manifest's SHA-256, and each checksum the target records or lists natively (S3 CRC64NVME and
// MD5, GCS CRC32C and MD5, Azure MD5), so that what it keeps is checked against the manifest.
// SHA-256 is collision-resistant: bytes that match it are the bytes the manifest was built from,
// for which every other digest the manifest lists holds by construction, so hashing them with
// MD5 and the CRCs too proves nothing more — on a restore (a local directory records nothing)
// or a registry push (SHA-256 only) that was over half of the CPU spent. A manifest without a
// SHA-256 has every checksum it lists checked.
func (r *replicator) writeSums(f manifest.File) providers.Checksums {
	all := providers.Checksums(f.Sums)
	if all.SHA256 == "" {
		return all
	}
	out := providers.Checksums{SHA256: all.SHA256}
	caps := r.to.Capabilities()
	for _, alg := range slices.Concat(caps.WriteChecksums, caps.ListChecksums) {
		out.Set(alg, all.Get(alg))
	}
	return out
}

// sourceTap counts the source bytes and checksums them with the cheapest digest the manifest
// has, so that a failed Write can tell a corrupt source (all bytes read, and they differ) from a
// transfer that broke (fewer bytes).
type sourceTap struct {
	r   io.Reader
	add func(int64)
	n   int64
	alg checksum.Algorithm
	h   hash.Hash
}

func newSourceTap(r io.Reader, f manifest.File, add func(int64)) *sourceTap {
	t := &sourceTap{r: r, add: add}
	t.alg = checksum.SHA256
	for _, alg := range []checksum.Algorithm{checksum.CRC32C, checksum.CRC64NVME} { // cheapest first
		if f.Sums.Get(alg) != "" {
			t.alg = alg
			break
		}
	}
	t.h = checksum.New(t.alg)
	return t
}

func (t *sourceTap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.h.Write(p[:n])
		t.n += int64(n)
		t.add(int64(n))
	}
	return n, err
}

// corrupt returns a *SourceCorruptError if the whole content was read and does not match.
func (t *sourceTap) corrupt(f manifest.File) error {
	if t.n > f.Size {
		return &SourceCorruptError{Path: f.Path, Detail: fmt.Sprintf("the source has more than the manifest's %d bytes", f.Size)}
	}
	if t.n < f.Size {
		return nil // cut short: a transfer problem, not (yet) proof of corruption
	}
	want, got := f.Sums.Get(t.alg), checksum.Sum(t.alg, t.h)
	if checksum.Equal(t.alg, want, got) {
		return nil
	}
	return &SourceCorruptError{Path: f.Path, Detail: fmt.Sprintf("its %s is %s, the manifest says %s", t.alg, got, want)}
}

// SourceCorruptError: the source's bytes of a file do not match the manifest; nothing was written.
type SourceCorruptError struct {
	Path   string
	Detail string
}

func (e *SourceCorruptError) Error() string {
	return fmt.Sprintf("the source's copy of %s is corrupt: %s; nothing was written — repair the source or replicate from another replica", e.Path, e.Detail)
}

// Is makes a SourceCorruptError match providers.ErrContentMismatch.
func (e *SourceCorruptError) Is(target error) bool { return target == providers.ErrContentMismatch }

func failureKind(err error) FailureKind {
	var sc *SourceCorruptError
	switch {
	case errors.As(err, &sc):
		return FailSourceCorrupt
	case localWrite(err):
		return FailLocalWrite
	case unreachable(err):
		return FailUnreachable
	}
	return FailError
}

// localWrite reports whether err is the target's Write failing on a local file system call.
func localWrite(err error) bool {
	var pe *providers.Error
	return errors.As(err, &pe) && pe.Op == "write" && localFileError(err)
}

// localFileError reports whether err comes from a local file system call (open, write, rename,
// mkdir …), which no network retry or reachability verdict applies to.
func localFileError(err error) bool {
	var pe *fs.PathError
	var le *os.LinkError
	return errors.As(err, &pe) || errors.As(err, &le)
}

// unreachable reports whether err is a store that kept failing or could not be reached, by
// providers' one classification (which also sees through a Write whose source broke mid-body).
// A local file system error (ENOSPC, ENOTDIR) is never an outage.
func unreachable(err error) bool {
	if localFileError(err) {
		return false
	}
	k := providers.KindOf(err)
	return k == providers.KindUnreachable || k == providers.KindTimeout
}

// retryable says whether a failed copy is the replicator's to try again. Only what no store can
// see: bytes that arrived cleanly but do not match the manifest — a source body cut short at a
// clean end, a checksum the target service rejected (the bytes changed on the way). Broken
// connections and bodies were already retried by the stores (the SDK per request, WithRetry per
// read body, see providers/retry.go): retrying them here too would multiply the attempts.
func retryable(ctx context.Context, err error, kind FailureKind) bool {
	if kind == FailSourceCorrupt || kind == FailLocalWrite {
		return false
	}
	return providers.KindOf(err) == providers.KindContentMismatch && providers.Retryable(ctx, err)
}

// statusForError is the run's status when a store could not be listed.
func statusForError(err error) Status {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Interrupted
	}
	if unreachable(err) {
		return Unreachable
	}
	return Failed
}

// verdict sums up a finished run from the per-file outcomes and the final quick verification.
func (r *replicator) verdict(rep *Report, after verify.ReplicaResult) Status {
	proven, failedCopy := map[string]bool{}, map[string]bool{}
	for _, c := range rep.Files {
		switch c.Outcome {
		case OutcomeCopied:
			proven[c.Path] = true
		case OutcomeFailed:
			failedCopy[c.Path] = true
		}
	}
	failedFiles := false
	for _, fr := range after.Files {
		if _, ok := r.m.File(fr.Path); !ok || failedCopy[fr.Path] {
			continue // EXTRA, or already accounted for by why its copy failed
		}
		switch {
		case fr.Status == verify.StatusOK:
		case fr.Status.Failed():
			failedFiles = true
		case proven[fr.Path], r.rereadOK[fr.Path]:
			// Written with its checksums verified, or re-read intact, by this run: proven without
			// a native checksum (a target such as file:// keeps none).
		default:
			rep.Unproven = append(rep.Unproven, fr.Path)
		}
	}
	unreachable, local, other := 0, 0, 0
	for _, c := range rep.Files {
		if c.Outcome != OutcomeFailed {
			continue
		}
		switch c.Failure {
		case FailUnreachable:
			unreachable++
		case FailLocalWrite:
			local++
		default:
			other++
		}
	}
	switch {
	case local > 0:
		return WriteFailed
	case other > 0 || failedFiles || len(rep.Unproven) > 0:
		return Failed
	case unreachable > 0:
		return Unreachable
	}
	return OK
}

// progressReader reports the bytes read through it.
type progressReader struct {
	r   io.Reader
	add func(int64)
	n   int64
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.n += int64(n)
		p.add(int64(n))
	}
	return n, err
}
