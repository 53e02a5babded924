package verify_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lifeboat/internal/testbed"
	"lifeboat/providers"
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
