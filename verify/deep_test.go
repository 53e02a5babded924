//go:build integration

package verify_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lifeboat/internal/testbed"
	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/providers/checksum"
	"lifeboat/verify"
)

// readLog is a Store that records every Read's options per key and, when slow, makes bodies
// arrive slowly (32 KiB per Read, 1 ms apart: a distant cloud's connection, far slower than
// SHA-256). breakRanged, if set, truncates the first that many ranged reads (Offset > 0) halfway.
type readLog struct {
	providers.Store
	slow        bool
	breakRanged atomic.Int64
	mu          sync.Mutex
	reads       map[string][]providers.ReadOptions
}

func (l *readLog) Read(ctx context.Context, key string, o providers.ReadOptions, fn func(io.Reader) error) error {
	l.mu.Lock()
	if l.reads == nil {
		l.reads = map[string][]providers.ReadOptions{}
	}
	l.reads[key] = append(l.reads[key], o)
	l.mu.Unlock()
	broken := o.Offset > 0 && l.breakRanged.Add(-1) >= 0
	return l.Store.Read(ctx, key, o, func(rd io.Reader) error {
		if broken {
			rd = io.MultiReader(io.LimitReader(rd, o.Length/2), errorReader{io.ErrUnexpectedEOF})
		}
		if l.slow {
			rd = slowReader{rd}
		}
		return fn(rd)
	})
}

type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) { return 0, e.err }

type slowReader struct{ r io.Reader }

func (s slowReader) Read(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	return s.r.Read(p[:min(len(p), 32<<10)])
}

// Deep verification reads every file whole, in one request, as it streams — not as ranges —
// and goes on with parallel ranged reads only for the rest of a big file in the tail whose
// connection is the limit. Each file's first read is the whole object, pinned to the listed
// revision, on a fast store and a slow one alike.
func TestDeepReadsWholeObjects(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	b := testbed.FileBackend(t)
	prefix := testbed.FreshPrefix("whole")
	testbed.Seed(t, b.Open(t, prefix, nil), f)
	for _, slow := range []bool{false, true} {
		l := &readLog{Store: b.Open(t, prefix, nil), slow: slow}
		var planned, progressed atomic.Int64
		o := testbed.VerifyOptions()
		o.Planned = func(n int64) { planned.Add(n) }
		o.Progress = func(n int64) { progressed.Add(n) }
		r := verify.Deep(testbed.Ctx(t), f.M, l, o)
		if r.Status != verify.ReplicaOK {
			t.Fatalf("slow %v: %s", slow, testbed.Dump(r))
		}
		if progressed.Load() != planned.Load() || planned.Load() != r.BytesRead {
			t.Errorf("slow %v: progress %d, planned %d, read %d", slow, progressed.Load(), planned.Load(), r.BytesRead)
		}
		ranged := 0
		for _, file := range f.M.Files {
			reads := l.reads[file.Path]
			if len(reads) == 0 || reads[0].Offset != 0 || reads[0].Length != 0 || reads[0].IfMatch == "" {
				t.Errorf("slow %v: %s: reads %+v, want a pinned whole-object read first", slow, file.Path, reads)
				continue
			}
			for _, rd := range reads[1:] {
				if rd.Offset <= 0 || rd.Length <= 0 || rd.Length > o.RangeSize || rd.IfMatch != reads[0].IfMatch {
					t.Errorf("slow %v: %s: read %+v after the whole read, want a pinned range of at most %d", slow, file.Path, rd, o.RangeSize)
				}
				ranged++
			}
		}
		if slow && ranged == 0 {
			t.Errorf("over a slow connection no big file went on as ranges: %v", l.reads)
		}
	}
}

// A ranged read of the tail that breaks is retried on its own (per-range retries), and the file
// is still OK; one that always breaks makes it ERROR, never OK.
func TestDeepTailRangeRetried(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	b := testbed.FileBackend(t)
	prefix := testbed.FreshPrefix("tailretry")
	testbed.Seed(t, b.Open(t, prefix, nil), f)

	l := &readLog{Store: b.Open(t, prefix, nil), slow: true}
	l.breakRanged.Store(1)
	r := verify.Deep(testbed.Ctx(t), f.M, l, testbed.VerifyOptions())
	if r.Status != verify.ReplicaOK || l.breakRanged.Load() >= 0 {
		t.Fatalf("one broken range (left to break: %d): %s", l.breakRanged.Load(), testbed.Dump(r))
	}
	retried := false
	for _, reads := range l.reads {
		seen := map[int64]int{}
		for _, rd := range reads[1:] {
			if seen[rd.Offset]++; seen[rd.Offset] == 2 {
				retried = true
			}
		}
	}
	if !retried {
		t.Errorf("no range was read twice: %v", l.reads)
	}

	l = &readLog{Store: b.Open(t, prefix, nil), slow: true}
	l.breakRanged.Store(1 << 30)
	r = verify.Deep(testbed.Ctx(t), f.M, l, testbed.VerifyOptions())
	if r.Status != verify.ReplicaUnreachable || !errors.Is(r.Err, providers.ErrUnreachable) {
		t.Errorf("every range broken: replica %s (%v), want UNREACHABLE", r.Status, r.Err)
	}
	for _, fr := range r.Files {
		if fr.Status == verify.StatusOK && len(l.reads[fr.Path]) > 1 {
			t.Errorf("%s is OK although its ranges always broke", fr.Path)
		}
	}
}

// A big file is read ahead on a goroutine of its own while the hash runs (so that a lone file
// uses two cores): read whole, re-invoked mid-body, going on as ranges over a slow connection,
// or cancelled, it comes out as before — OK only when every byte hashed matches.
func TestDeepLoneFileReadAhead(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	b := testbed.FileBackend(t)
	prefix := testbed.FreshPrefix("lone")
	testbed.Seed(t, b.Open(t, prefix, nil), f)
	lone := *f.M
	shard, _ := f.M.File(f.Shards()[0])
	lone.Files = []manifest.File{shard}

	var again atomic.Int64
	for name, s := range map[string]providers.Store{
		"plain":     b.Open(t, prefix, nil),
		"reinvoked": reinvoker{b.Open(t, prefix, nil), &again},
		"slow":      &readLog{Store: b.Open(t, prefix, nil), slow: true},
	} {
		r := verify.Deep(testbed.Ctx(t), &lone, s, testbed.VerifyOptions())
		if r.Status != verify.ReplicaOK || r.BytesRead != shard.Size {
			t.Errorf("%s: %s", name, testbed.Dump(r))
		}
	}
	if again.Load() == 0 {
		t.Error("the callback was never called again")
	}

	ctx, cancel := context.WithCancel(context.Background())
	o := testbed.VerifyOptions()
	var once sync.Once
	o.Progress = func(int64) { once.Do(cancel) }
	r := verify.Deep(ctx, &lone, b.Open(t, prefix, nil), o)
	if r.ErrorKind != verify.ErrorCanceled || r.Status == verify.ReplicaOK {
		t.Errorf("cancelled: kind %q, %s", r.ErrorKind, testbed.Dump(r))
	}

	// A copy of the shard with one byte changed in its last chunk is CORRUPT.
	bad := b.Open(t, testbed.FreshPrefix("lonebad"), nil)
	testbed.Put(t, bad, shard.Path, testbed.FlipBit(f.Data(t, shard.Path), int(shard.Size)-10), providers.Checksums{})
	if r := verify.Deep(testbed.Ctx(t), &lone, bad, testbed.VerifyOptions()); testbed.ByPath(r)[shard.Path].Status != verify.StatusCorrupt {
		t.Errorf("flipped bit: %s", testbed.Dump(r))
	}
}

// Deep verification proves bytes by the manifest's BLAKE3 when it records one, by SHA-256 when
// it does not (a manifest from before BLAKE3) or when asked (Options.Digest): each hash alone
// decides, so a manifest whose BLAKE3 of one file is wrong fails that file by default and passes
// it by SHA-256, and intact bytes are OK either way.
func TestDeepDigestChoice(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "small")
	b := testbed.FileBackend(t)
	prefix := testbed.FreshPrefix("digest")
	s := b.Open(t, prefix, nil)
	testbed.Seed(t, s, f)
	shard := f.Shards()[0]

	withFiles := func(edit func(*manifest.File)) *manifest.Manifest {
		m := *f.M
		m.Files = append([]manifest.File(nil), f.M.Files...)
		for i := range m.Files {
			edit(&m.Files[i])
		}
		return &m
	}
	noBLAKE3 := withFiles(func(file *manifest.File) { file.Sums.BLAKE3 = "" })
	wrongBLAKE3 := withFiles(func(file *manifest.File) {
		if file.Path == shard {
			file.Sums.BLAKE3 = strings.Repeat("0", 64)
		}
	})
	sha := testbed.VerifyOptions()
	sha.Digest = checksum.SHA256
	for _, c := range []struct {
		name  string
		m     *manifest.Manifest
		o     verify.Options
		proof checksum.Algorithm
		shard verify.Status
	}{
		{"default", f.M, testbed.VerifyOptions(), checksum.BLAKE3, verify.StatusOK},
		{"sha256 asked", f.M, sha, checksum.SHA256, verify.StatusOK},
		{"manifest without blake3", noBLAKE3, testbed.VerifyOptions(), checksum.SHA256, verify.StatusOK},
		{"wrong blake3", wrongBLAKE3, testbed.VerifyOptions(), checksum.BLAKE3, verify.StatusCorrupt},
		{"wrong blake3, sha256 asked", wrongBLAKE3, sha, checksum.SHA256, verify.StatusOK},
	} {
		r := verify.Deep(testbed.Ctx(t), c.m, s, c.o)
		for _, fr := range r.Files {
			want := verify.StatusOK
			if fr.Path == shard {
				want = c.shard
			}
			if fr.Status != want {
				t.Errorf("%s: %s is %s (%s), want %s", c.name, fr.Path, fr.Status, fr.Detail, want)
				continue
			}
			if fr.Actual.Get(c.proof) == "" || fr.Expected.Get(c.proof) == "" || !strings.HasPrefix(fr.Detail, string(c.proof)+" of ") {
				t.Errorf("%s: %s not judged by %s: %s; actual %+v", c.name, fr.Path, c.proof, fr.Detail, fr.Actual.Sums)
			}
			other := checksum.SHA256
			if c.proof == checksum.SHA256 {
				other = checksum.BLAKE3
			}
			if fr.Actual.Get(other) != "" {
				t.Errorf("%s: %s computed %s too (the point is to hash once): %+v", c.name, fr.Path, other, fr.Actual.Sums)
			}
		}
	}
}
