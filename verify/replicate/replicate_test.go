//go:build integration

package replicate_test

import (
	"context"
	"errors"
	"fmt"
	"lifeboat/internal/testbed"
	"lifeboat/verify/replicate"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"lifeboat/internal/faultproxy"
	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/verify"
)

// Replicate tests run on real servers: every provider is a target, fed from another provider
// (file ← azure, s3 ← file, gcs ← s3, azure ← gcs), and the target must verify OK afterwards —
// quickly (native checksums) on S3, GCS and Azure, by re-reading on file://, which keeps none.

func replOptions() replicate.Options {
	return replicate.Options{Jobs: 4, Backoff: time.Millisecond}
}

// replSourceOf returns the backend that feeds target i of testbed.Backends(t).
func replSourceOf(all []*testbed.Backend, i int) *testbed.Backend {
	return all[(i+len(all)-1)%len(all)]
}

// replFixtureStore is the generated bundle itself, as a read-only file:// replica.
func replFixtureStore(t testing.TB, f *testbed.Fixture) providers.Store {
	return testbed.OpenStore(t, "file://"+f.Root, testbed.StoreOptions())
}

// replCopyFixture copies the fixture's bundle into a private directory (to break it) and opens it.
func replCopyFixture(t testing.TB, f *testbed.Fixture) (string, providers.Store) {
	t.Helper()
	dir := t.TempDir()
	for _, file := range f.M.Files {
		p := filepath.Join(dir, filepath.FromSlash(file.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data(t, file.Path), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, testbed.OpenStore(t, "file://"+dir, testbed.StoreOptions())
}

func run(t testing.TB, m *manifest.Manifest, from, to providers.Store, o replicate.Options) *replicate.Report {
	t.Helper()
	rep, err := replicate.Run(testbed.Ctx(t), m, from, to, o)
	if err != nil {
		t.Fatalf("replicate %s → %s: %v", from, to, err)
	}
	return rep
}

// replPaths returns the paths of the plan with the given outcome, sorted.
func replPaths(rep *replicate.Report, outcome replicate.CopyOutcome) []string {
	var out []string
	for _, c := range rep.Files {
		if c.Outcome == outcome {
			out = append(out, c.Path)
		}
	}
	sort.Strings(out)
	return out
}

func replDump(rep *replicate.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s → %s: %s copied=%d failed=%d ok=%d reread=%d extra=%v unproven=%v\n",
		rep.From, rep.To, rep.Status, rep.Copied, rep.Failed, rep.AlreadyOK, rep.RereadOK, rep.Extra, rep.Unproven)
	for _, c := range rep.Files {
		fmt.Fprintf(&b, "  %-8s %-17s %s from %s attempts=%d %s %s\n", c.Outcome, c.Reason, c.Path, c.From, c.Attempts, c.Failure, c.Error)
	}
	return b.String()
}

// replListing returns key → size/revision of every object in the bundle directories.
func replListing(t testing.TB, s providers.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range []string{"model", "engine", "deploy"} {
		err := s.List(testbed.Ctx(t), dir, func(o providers.Object) error {
			out[o.Key] = fmt.Sprintf("%d/%s", o.Size, o.Revision)
			return nil
		})
		if err != nil && !errors.Is(err, providers.ErrNotFound) {
			t.Fatalf("list %s: %v", s, err)
		}
	}
	return out
}

// replAssertIntact checks that every manifest file of the target is intact and, where the
// provider keeps native checksums, quick-verifiable: Quick says OK for every file and each object
// carries the checksum its store records on write, equal to the manifest's. On file:// (no native
// checksums) Deep must say OK for every file.
func replAssertIntact(t *testing.T, b *testbed.Backend, s providers.Store, m *manifest.Manifest) {
	t.Helper()
	if !b.Native {
		d := verify.Deep(testbed.Ctx(t), m, s, testbed.VerifyOptions())
		if d.Counts[verify.StatusOK] != len(m.Files) {
			t.Fatalf("deep verify after replicate:\n%s", testbed.Dump(d))
		}
		return
	}
	q := verify.Quick(testbed.Ctx(t), m, s, testbed.VerifyOptions())
	if q.Status != verify.ReplicaOK || q.Counts[verify.StatusOK] != len(m.Files) {
		t.Fatalf("quick verify after replicate is not OK in full:\n%s", testbed.Dump(q))
	}
	for _, f := range m.Files {
		obj, err := s.Stat(testbed.Ctx(t), f.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, alg := range s.Capabilities().WriteChecksums {
			c, ok := obj.Checksum(alg)
			want := map[providers.Algorithm]string{providers.CRC64NVME: f.Sums.CRC64NVME, providers.CRC32C: f.Sums.CRC32C, providers.MD5: f.Sums.MD5}[alg]
			if !ok || c.Value != want {
				t.Errorf("%s: native %s %q (present %v), manifest %q: not quick-verifiable", f.Path, alg, c.Value, ok, want)
			}
		}
	}
}

// Seeding a replica copies every file, from another provider; the replica then verifies OK in
// full; running again copies nothing and writes nothing.
func TestReplicateSeedsEveryProvider(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	all := testbed.Backends(t)
	for i, b := range all {
		src := replSourceOf(all, i)
		t.Run(src.Name+"-to-"+b.Name, func(t *testing.T) {
			t.Parallel()
			from := src.Open(t, testbed.FreshPrefix("repl-src"), nil)
			testbed.Seed(t, from, f)
			to := b.Open(t, testbed.FreshPrefix("repl-seed"), nil)

			rep := run(t, f.M, from, to, replOptions())
			if rep.Status != replicate.OK || rep.Copied != len(f.M.Files) || rep.Failed != 0 || rep.AlreadyOK != 0 {
				t.Fatalf("seed:\n%s", replDump(rep))
			}
			for _, c := range rep.Files {
				wantFrom := replicate.FromSource
				if mf, _ := f.M.File(c.Path); mf.Data != nil {
					wantFrom = replicate.FromManifest
				}
				if c.Reason != verify.StatusMissing || c.From != wantFrom {
					t.Errorf("%s: reason %s from %s, want MISSING from %s", c.Path, c.Reason, c.From, wantFrom)
				}
			}
			if rep.Target == nil || rep.Target.Counts[verify.StatusError] != 0 || rep.Bytes == 0 {
				t.Fatalf("report lacks the final verification: %+v", rep.Target)
			}
			replAssertIntact(t, b, to, f.M)

			before := replListing(t, to)
			again := run(t, f.M, from, to, replOptions())
			if again.Status != replicate.OK || len(again.Files) != 0 || again.AlreadyOK+again.RereadOK != len(f.M.Files) {
				t.Fatalf("second run is not a no-op:\n%s", replDump(again))
			}
			if after := replListing(t, to); !maps.Equal(before, after) {
				t.Errorf("second run changed the target:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// A run cancelled in the middle of a multipart upload leaves only complete objects (and, on S3, no
// pending upload); running again copies exactly the files that are still missing.
func TestReplicateResumesAfterCancel(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	// With one job, files go largest first (ties in path order), as Run orders them: cancel once
	// the first file and 5.5 MiB of the second have been read, when the second's first 5 MiB part
	// is up and its next is being read. The first is then complete, the second absent.
	files := slices.Clone(f.M.Files)
	sort.SliceStable(files, func(a, b int) bool { return files[a].Path < files[b].Path })
	sort.SliceStable(files, func(a, b int) bool { return files[a].Size > files[b].Size })
	first, shard := files[0].Path, files[1].Path
	if files[1].Size < 11<<19+64<<10 {
		t.Fatalf("fixture file %s is only %d bytes: no multipart upload to interrupt", shard, files[1].Size)
	}
	cut := files[0].Size + 11<<19
	for _, b := range testbed.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			prefix := testbed.FreshPrefix("repl-resume")
			to := b.Open(t, prefix, nil)
			ctx, cancel := context.WithCancel(testbed.Ctx(t))
			defer cancel()
			o := replOptions()
			o.Jobs = 1
			var moved atomic.Int64
			o.Progress = func(n int64) {
				if moved.Add(n) > cut {
					cancel()
				}
			}
			rep, err := replicate.Run(ctx, f.M, replFixtureStore(t, f), to, o)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled run returned %v\n%s", err, replDump(rep))
			}

			present := replListing(t, to)
			if _, ok := present[shard]; ok || len(present) != 1 {
				t.Fatalf("cancellation did not land in the middle of %s: %d of %d objects present", shard, len(present), len(f.M.Files))
			}
			if _, ok := present[first]; !ok {
				t.Fatalf("the largest file %s, copied first, is not there: %v", first, present)
			}
			var have []manifest.File
			for _, file := range f.M.Files {
				if _, ok := present[file.Path]; ok {
					have = append(have, file)
				}
			}
			sub := &manifest.Manifest{OCI: f.M.OCI, Model: f.M.Model, Files: have}
			d := verify.Deep(testbed.Ctx(t), sub, to, testbed.VerifyOptions())
			if d.Counts[verify.StatusOK] != len(have) || d.Counts[verify.StatusExtra] != 0 {
				t.Fatalf("a partial object is visible after cancellation:\n%s", testbed.Dump(d))
			}
			if b.S3 != nil {
				ups, err := b.S3.Client().ListMultipartUploads(testbed.Ctx(t), &s3.ListMultipartUploadsInput{Bucket: aws.String(testbed.Bucket), Prefix: aws.String(prefix + "/")})
				if err != nil {
					t.Fatal(err)
				}
				if len(ups.Uploads) != 0 {
					t.Errorf("%d multipart upload(s) left pending after cancellation", len(ups.Uploads))
				}
			}

			rep = run(t, f.M, replFixtureStore(t, f), to, replOptions())
			var want []string
			for _, file := range f.M.Files {
				if _, ok := present[file.Path]; !ok {
					want = append(want, file.Path)
				}
			}
			if got := replPaths(rep, replicate.OutcomeCopied); rep.Status != replicate.OK || !slices.Equal(got, want) {
				t.Fatalf("resumed run copied %v, want exactly the missing %v\n%s", got, want, replDump(rep))
			}
			replAssertIntact(t, b, to, f.M)
		})
	}
}

// Planted damage — a missing file, a truncated one, a same-size bit flip, a lost embedded engine
// file, an extra file — is planned exactly by --dry-run (which changes nothing) and repaired by the
// run, which leaves the extra file alone and copies nothing that was intact.
func TestReplicateRepairsPlantedCorruption(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "small")
	sh := f.Shards()
	var engine string
	for _, file := range f.M.Files {
		if file.Part == manifest.PartEngine {
			engine = file.Path
		}
	}
	for _, b := range testbed.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			prefix := testbed.FreshPrefix("repl-repair")
			to := b.Open(t, prefix, nil)
			testbed.Seed(t, to, f)
			testbed.Del(t, to, "model/tokenizer.json")
			testbed.Del(t, to, engine)
			cfg := f.Data(t, "model/config.json")
			testbed.Put(t, to, "model/config.json", cfg[:len(cfg)/2], providers.Checksums{})
			testbed.Put(t, to, sh[1], testbed.FlipBit(f.Data(t, sh[1]), 5000), providers.Checksums{})
			testbed.Put(t, to, "model/notes.txt", []byte("not part of the bundle\n"), providers.Checksums{})
			flipped := verify.StatusChecksumMismatch
			if !b.Native {
				flipped = verify.StatusCorrupt // re-read: file:// keeps no checksum
			}
			want := map[string]verify.Status{
				"model/tokenizer.json": verify.StatusMissing, engine: verify.StatusMissing,
				"model/config.json": verify.StatusSizeMismatch, sh[1]: flipped,
			}
			if b.Az != nil {
				// A blob committed from blocks without Content-MD5: UNVERIFIED, so copied again
				// to make it quick-verifiable.
				testbed.AzureBlocks(t, b, prefix+"/"+sh[0], f.Data(t, sh[0]), nil)
				want[sh[0]] = verify.StatusUnverified
			}
			// The source lacks the engine file: it is written from the manifest.
			srcDir, from := replCopyFixture(t, f)
			if err := os.Remove(filepath.Join(srcDir, filepath.FromSlash(engine))); err != nil {
				t.Fatal(err)
			}

			before := replListing(t, to)
			o := replOptions()
			o.DryRun = true
			plan := run(t, f.M, from, to, o)
			got := map[string]verify.Status{}
			for _, c := range plan.Files {
				got[c.Path] = c.Reason
				if c.Outcome != replicate.OutcomePlanned {
					t.Errorf("dry run: %s outcome %s", c.Path, c.Outcome)
				}
			}
			if plan.Status != replicate.Planned || !maps.Equal(got, want) || !slices.Equal(plan.Extra, []string{"model/notes.txt"}) {
				t.Fatalf("dry run plan %v extra %v, want %v\n%s", got, plan.Extra, want, replDump(plan))
			}
			if after := replListing(t, to); !maps.Equal(before, after) {
				t.Fatalf("dry run changed the target:\nbefore %v\nafter  %v", before, after)
			}

			rep := run(t, f.M, from, to, replOptions())
			wantCopied := slices.Sorted(maps.Keys(want))
			if got := replPaths(rep, replicate.OutcomeCopied); rep.Status != replicate.OK || !slices.Equal(got, wantCopied) {
				t.Fatalf("copied %v, want %v\n%s", got, wantCopied, replDump(rep))
			}
			for _, c := range rep.Files {
				if c.Path == engine && c.From != replicate.FromManifest {
					t.Errorf("%s copied from %s, want from the manifest", engine, c.From)
				}
			}
			after := replListing(t, to)
			for k, v := range before {
				if _, damaged := want[k]; !damaged && after[k] != v {
					t.Errorf("%s was intact but was rewritten (%s → %s)", k, v, after[k])
				}
			}
			if _, ok := after["model/notes.txt"]; !ok || !slices.Equal(rep.Extra, []string{"model/notes.txt"}) {
				t.Errorf("the extra file was not left alone and reported: extra %v", rep.Extra)
			}
			replAssertIntact(t, b, to, f.M)
		})
	}
}

// A source whose bytes are not the manifest's fails that file with a clear reason and writes
// nothing under its name; files it lacks fail as missing; the rest is copied.
func TestReplicateRefusesCorruptSource(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "small")
	sh := f.Shards()
	for _, b := range testbed.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			srcDir, from := replCopyFixture(t, f)
			// Same size, other bytes: only reading them shows it (file:// has no checksums).
			if err := os.WriteFile(filepath.Join(srcDir, filepath.FromSlash(sh[0])), testbed.FlipBit(f.Data(t, sh[0]), 777), 0o644); err != nil {
				t.Fatal(err)
			}
			// Truncated: its size gives it away before any read.
			tok := f.Data(t, "model/tokenizer.json")
			if err := os.WriteFile(filepath.Join(srcDir, "model", "tokenizer.json"), tok[:100], 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(srcDir, "model", "README.md")); err != nil {
				t.Fatal(err)
			}
			to := b.Open(t, testbed.FreshPrefix("repl-badsrc"), nil)
			rep := run(t, f.M, from, to, replOptions())
			if rep.Status != replicate.Failed || rep.Failed != 3 || rep.Copied != len(f.M.Files)-3 {
				t.Fatalf("corrupt source:\n%s", replDump(rep))
			}
			wantFail := map[string]replicate.FailureKind{
				sh[0]: replicate.FailSourceCorrupt, "model/tokenizer.json": replicate.FailSourceCorrupt, "model/README.md": replicate.FailSourceMissing,
			}
			for _, c := range rep.Files {
				if k, ok := wantFail[c.Path]; ok {
					if c.Outcome != replicate.OutcomeFailed || c.Failure != k || !strings.Contains(c.Error, "source") {
						t.Errorf("%s: outcome %s failure %s error %q, want failed %s", c.Path, c.Outcome, c.Failure, c.Error, k)
					}
					if c.Path == sh[0] && (c.Attempts != 1 || !strings.Contains(c.Error, "corrupt")) {
						t.Errorf("%s: corrupt source tried %d times (%s); want one attempt and a clear reason", c.Path, c.Attempts, c.Error)
					}
				}
			}
			present := replListing(t, to)
			for p := range wantFail {
				if _, ok := present[p]; ok {
					t.Errorf("%s was written to the target from a bad source", p)
				}
			}
		})
	}
}

// Bit rot on an S3 server's disk, under checksums that still say the bytes are right: the object
// passes a quick check of the source, but its bytes are caught while they stream, and the target
// gets nothing under that name.
func TestReplicateCatchesSourceRotUnderItsChecksums(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "small")
	b := testbed.S3Backend(t)
	prefix := testbed.FreshPrefix("repl-rot")
	from := b.Open(t, prefix, nil)
	testbed.Seed(t, from, f)
	shard := f.Shards()[0]
	onDisk := filepath.Join(b.S3.Dir, testbed.Bucket, prefix, filepath.FromSlash(shard))
	data, err := os.ReadFile(onDisk)
	if err != nil {
		t.Fatalf("versitygw keeps objects as files: %v", err)
	}
	if err := os.WriteFile(onDisk, testbed.FlipBit(data, 4242), 0o644); err != nil {
		t.Fatal(err)
	}
	if q := testbed.ByPath(verify.Quick(testbed.Ctx(t), f.M, from, testbed.VerifyOptions()))[shard]; q.Status != verify.StatusOK {
		t.Fatalf("precondition: the rotten object should still look OK to quick verify, is %s", q.Status)
	}
	to := testbed.OpenStore(t, "file://"+t.TempDir(), testbed.StoreOptions())
	rep := run(t, f.M, from, to, replOptions())
	c := rep.Files[slices.IndexFunc(rep.Files, func(c replicate.CopyResult) bool { return c.Path == shard })]
	if rep.Status != replicate.Failed || c.Outcome != replicate.OutcomeFailed || c.Failure != replicate.FailSourceCorrupt {
		t.Fatalf("rotten source object:\n%s", replDump(rep))
	}
	if _, ok := replListing(t, to)[shard]; ok {
		t.Fatalf("the rotten object was written to the target")
	}
}

// Property: whatever subset of a replica's files is missing, truncated, bit-flipped or replaced,
// replicate copies exactly that subset — never a file that was intact — and the replica then
// verifies OK.
func TestReplicateProperty(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "small")
	for _, b := range []*testbed.Backend{testbed.FileBackend(t), testbed.GCSBackend(t)} {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			seed0 := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed0)
			rng := rand.New(rand.NewPCG(seed0, 7))
			for iter := range 6 {
				to := b.Open(t, testbed.FreshPrefix("repl-prop"), nil)
				testbed.Seed(t, to, f)
				damaged := map[string]bool{}
				for _, file := range f.M.Files {
					data := f.Data(t, file.Path)
					switch rng.IntN(8) {
					case 0:
						testbed.Del(t, to, file.Path)
					case 1:
						testbed.Put(t, to, file.Path, data[:rng.IntN(len(data))], providers.Checksums{})
					case 2:
						testbed.Put(t, to, file.Path, testbed.FlipBit(data, rng.IntN(len(data))), providers.Checksums{})
					case 3:
						testbed.Put(t, to, file.Path, append(data, 'x'), providers.Checksums{})
					default:
						continue
					}
					damaged[file.Path] = true
				}
				before := replListing(t, to)
				rep := run(t, f.M, replFixtureStore(t, f), to, replOptions())
				want := slices.Sorted(maps.Keys(damaged))
				if got := replPaths(rep, replicate.OutcomeCopied); rep.Status != replicate.OK || !slices.Equal(got, want) {
					t.Fatalf("iteration %d (seed %d): copied %v, want %v\n%s", iter, seed0, got, want, replDump(rep))
				}
				after := replListing(t, to)
				for k, v := range before {
					if !damaged[k] && after[k] != v {
						t.Fatalf("iteration %d (seed %d): intact %s was rewritten", iter, seed0, k)
					}
				}
				replAssertIntact(t, b, to, f.M)
			}
		})
	}
}

// Progress never runs past the total and ends at the bytes copied, however many files run at once.
func TestReplicateProgressAddsUp(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "small")
	to := testbed.OpenStore(t, "file://"+t.TempDir(), testbed.StoreOptions())
	var mu sync.Mutex
	var done, total int64
	o := replOptions()
	o.Jobs = 8
	o.Progress = func(n int64) { mu.Lock(); done += n; mu.Unlock() }
	o.Total = func(_, n int64) { mu.Lock(); total = n; mu.Unlock() }
	rep := run(t, f.M, replFixtureStore(t, f), to, o)
	if done != rep.Bytes || total != rep.Bytes {
		t.Fatalf("progress %d of %d, copied %d", done, total, rep.Bytes)
	}
}

// Connection resets and truncated bodies while reading the source are retried; a clean but short
// body (a proxy that drops the rest) is caught by the size and checksum checks and retried too;
// a source that keeps breaking is reported UNREACHABLE with nothing written under its files'
// names. Bursts of 503 on the target's writes are ridden out.
func TestReplicateFaults(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "small")
	for _, b := range testbed.Backends(t)[1:] { // the cloud providers: their traffic can be faulted
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			prefix := testbed.FreshPrefix("repl-fault-src")
			testbed.Seed(t, b.Open(t, prefix, nil), f)
			for _, tc := range []struct {
				name   string
				action faultproxy.Action
			}{
				{"reset", faultproxy.Reset(1000)},
				{"truncate", faultproxy.Truncate(1000)},
				{"shorten", faultproxy.Shorten(1000)},
			} {
				in := faultproxy.New()
				rule := in.Add(&faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpRead), Times: 2, Action: tc.action})
				to := testbed.OpenStore(t, "file://"+t.TempDir(), testbed.StoreOptions())
				rep := run(t, f.M, b.Open(t, prefix, in.Client()), to, replOptions())
				if rule.Fired() != 2 || rep.Status != replicate.OK {
					t.Fatalf("%s: fired %d times\n%s", tc.name, rule.Fired(), replDump(rep))
				}
				replAssertIntact(t, testbed.FileBackend(t), to, f.M)
			}

			// Persistently broken reads (reset before the first byte: the GCS and Azure readers
			// resume a broken body where it broke, so a later cut only slows them down): every
			// file read from the source fails, and none is written.
			in := faultproxy.New(&faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpRead), Action: faultproxy.Reset(0)})
			to := testbed.OpenStore(t, "file://"+t.TempDir(), testbed.StoreOptions())
			o := replOptions()
			o.StallTimeout = 2 * time.Second // the GCS reader reopens a broken body without end; the guard also times opens, so leave room on a loaded machine
			rep := run(t, f.M, b.Open(t, prefix, in.Client()), to, o)
			if rep.Status != replicate.Unreachable {
				t.Fatalf("persistent resets: status %s\n%s", rep.Status, replDump(rep))
			}
			broken := 0
			for _, c := range rep.Files {
				if mf, _ := f.M.File(c.Path); mf.Data == nil {
					broken++
				}
			}
			if got := in.Counts()[faultproxy.OpRead]; got < 3*broken {
				t.Errorf("persistent resets: %d reads of %d broken files; want each tried 3 times by the store", got, broken)
			}
			present := replListing(t, to)
			for _, c := range rep.Files {
				mf, _ := f.M.File(c.Path)
				broken := mf.Data == nil
				if broken != (c.Outcome == replicate.OutcomeFailed) {
					t.Errorf("%s (%d bytes): outcome %s", c.Path, mf.Size, c.Outcome)
				}
				if !broken {
					continue
				}
				// The stores retried the broken bodies (providers.WithRetry); the replicator, which
				// retries only bytes that arrived altered, does not multiply those attempts.
				if c.Failure != replicate.FailUnreachable || c.Attempts != 1 {
					t.Errorf("%s: failure %s after %d attempts (%s); want unreachable after 1", c.Path, c.Failure, c.Attempts, c.Error)
				}
				if _, ok := present[c.Path]; ok {
					t.Errorf("%s: written although every read of it broke", c.Path)
				}
			}

			// 503 bursts on the target's writes: the SDK retries them.
			in = faultproxy.New()
			busy := in.Add(&faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpWrite), Times: 3, Action: faultproxy.Status(503, "")})
			dst := testbed.FreshPrefix("repl-fault-dst")
			tgt := b.Open(t, dst, in.Client())
			rep = run(t, f.M, replFixtureStore(t, f), tgt, replOptions())
			if busy.Fired() != 3 || rep.Status != replicate.OK {
				t.Fatalf("503 bursts on writes: fired %d\n%s", busy.Fired(), replDump(rep))
			}
			replAssertIntact(t, b, b.Open(t, dst, nil), f.M)
		})
	}
}

// Bytes that rot on a server's disk under a stored checksum that still describes what was written
// pass quick verification, so a quick plan leaves them; a deep plan finds and repairs them.
func TestReplicateDeepRepairsRotUnderItsChecksums(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "small")
	b := testbed.S3Backend(t)
	prefix := testbed.FreshPrefix("repl-deep")
	to := b.Open(t, prefix, nil)
	testbed.Seed(t, to, f)
	shard := f.Shards()[1]
	onDisk := filepath.Join(b.S3.Dir, testbed.Bucket, prefix, filepath.FromSlash(shard))
	data, err := os.ReadFile(onDisk)
	if err != nil {
		t.Fatalf("versitygw keeps objects as files: %v", err)
	}
	if err := os.WriteFile(onDisk, testbed.FlipBit(data, 999), 0o644); err != nil {
		t.Fatal(err)
	}
	from := replFixtureStore(t, f)
	if rep := run(t, f.M, from, to, replOptions()); len(rep.Files) != 0 || rep.AlreadyOK != len(f.M.Files) {
		t.Fatalf("a quick plan cannot see rot under intact checksums, yet:\n%s", replDump(rep))
	}
	o := replOptions()
	o.Deep = true
	rep := run(t, f.M, from, to, o)
	// Deep verification reads the rotten object as CORRUPT — or as ERROR, when the S3 SDK's own
	// response checksum validation refuses the body first: either way it is copied again.
	if got := replPaths(rep, replicate.OutcomeCopied); rep.Status != replicate.OK || !slices.Equal(got, []string{shard}) ||
		(rep.Files[0].Reason != verify.StatusCorrupt && rep.Files[0].Reason != verify.StatusError) || rep.RereadOK != len(f.M.Files)-1 {
		t.Fatalf("deep plan:\n%s", replDump(rep))
	}
	if d := verify.Deep(testbed.Ctx(t), f.M, to, testbed.VerifyOptions()); d.Status != verify.ReplicaOK {
		t.Fatalf("deep verify after the repair:\n%s", testbed.Dump(d))
	}
}
