//go:build integration

package verify_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"lifeboat/internal/testbed"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"lifeboat/providers"
	"lifeboat/verify"
)

// gauge wraps a Store and records the most calls (List, Stat, Read) ever in flight at once,
// across every store sharing it. Reads complete in random order (a short random pause before
// each), so ranged reads finish out of order.
type gauge struct {
	providers.Store
	cur, max *atomic.Int64
	jitter   bool
}

func (g gauge) enter() func() {
	n := g.cur.Add(1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			break
		}
	}
	return func() { g.cur.Add(-1) }
}

func (g gauge) List(ctx context.Context, dir string, fn func(providers.Object) error) error {
	defer g.enter()()
	return g.Store.List(ctx, dir, fn)
}

func (g gauge) Stat(ctx context.Context, key string) (providers.Object, error) {
	defer g.enter()()
	return g.Store.Stat(ctx, key)
}

func (g gauge) Read(ctx context.Context, key string, o providers.ReadOptions, fn func(io.Reader) error) error {
	defer g.enter()()
	if g.jitter {
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
	}
	return g.Store.Read(ctx, key, o, fn)
}

// Replicas verifies several stores at once within one bound of requests in flight — even a bound
// of 1 completes — and reports them in the order given.
func TestReplicasShareTheJobsBound(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	var cur, max atomic.Int64
	var stores []providers.Store
	for _, b := range []*testbed.Backend{testbed.FileBackend(t), testbed.GCSBackend(t), testbed.S3Backend(t)} {
		prefix := testbed.FreshPrefix("jobs")
		testbed.Seed(t, b.Open(t, prefix, nil), f)
		stores = append(stores, gauge{Store: b.Open(t, prefix, nil), cur: &cur, max: &max, jitter: true})
	}
	for _, jobs := range []int{1, 3} {
		for _, mode := range []verify.Mode{verify.ModeQuick, verify.ModeDeep} {
			max.Store(0)
			o := testbed.VerifyOptions()
			o.Jobs, o.RangeSize = jobs, 256<<10
			var progressed atomic.Int64
			var planned atomic.Int64
			o.Progress = func(n int64) { progressed.Add(n) }
			o.Planned = func(n int64) { planned.Add(n) }
			rep := verify.Replicas(testbed.Ctx(t), f.M, stores, mode, o)
			if rep.Mode != string(mode) || len(rep.Replicas) != len(stores) {
				t.Fatalf("report %+v", rep)
			}
			for i, r := range rep.Replicas {
				if r.URL != stores[i].String() {
					t.Errorf("replica %d is %s, want %s", i, r.URL, stores[i])
				}
				if r.Status == verify.ReplicaFailed || r.Status == verify.ReplicaUnreachable {
					t.Errorf("-j %d %s: %s", jobs, mode, testbed.Dump(r))
				}
				if mode == verify.ModeDeep && r.Status != verify.ReplicaOK {
					t.Errorf("-j %d deep: %s", jobs, testbed.Dump(r))
				}
			}
			if got := max.Load(); got > int64(jobs) {
				t.Errorf("-j %d %s: %d calls in flight at once", jobs, mode, got)
			}
			if mode == verify.ModeDeep && (progressed.Load() != planned.Load() || planned.Load() == 0) {
				t.Errorf("-j %d deep: progress %d of planned %d bytes", jobs, progressed.Load(), planned.Load())
			}
		}
	}
}

// Cancelling a deep verification stops it promptly and reports what could not be checked; it
// never reports OK for a file it did not finish.
func TestDeepCancelled(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	b := testbed.FileBackend(t)
	prefix := testbed.FreshPrefix("cancel")
	testbed.Seed(t, b.Open(t, prefix, nil), f)
	var cur, max atomic.Int64
	s := gauge{Store: b.Open(t, prefix, nil), cur: &cur, max: &max, jitter: true}
	ctx, cancel := context.WithCancel(context.Background())
	o := testbed.VerifyOptions()
	o.RangeSize = 64 << 10
	var once sync.Once
	o.Progress = func(int64) { once.Do(cancel) }
	r := verify.Deep(ctx, f.M, s, o)
	if r.ErrorKind != verify.ErrorCanceled || !errors.Is(r.Err, context.Canceled) {
		t.Errorf("cancelled deep: kind %q err %v", r.ErrorKind, r.Err)
	}
	for _, fr := range r.Files {
		if fr.Status == verify.StatusOK && !testbed.ProvenByRead(fr) {
			t.Errorf("%s OK without a matching hash", fr.Path)
		}
	}
	if r.Status == verify.ReplicaOK {
		t.Errorf("a cancelled verification is OK:\n%s", testbed.Dump(r))
	}
}

// reinvoker is a Store whose Read calls the callback twice, the way a retrying store does after a
// connection breaks mid-body: first with a body that breaks halfway, then with the whole body.
// A callback that stops for a reason of its own (not the body's error) gets that error back, as
// from a real store; again counts the callbacks that were called again.
type reinvoker struct {
	providers.Store
	again *atomic.Int64
}

var errBroken = errors.New("connection broke mid-body")

func (r reinvoker) Read(ctx context.Context, key string, o providers.ReadOptions, fn func(io.Reader) error) error {
	return r.Store.Read(ctx, key, o, func(rd io.Reader) error {
		data, err := io.ReadAll(rd)
		if err != nil {
			return err
		}
		switch err := fn(io.MultiReader(bytes.NewReader(data[:len(data)/2]), iotest.ErrReader(errBroken))); {
		case err == nil:
			return fmt.Errorf("first call accepted a body that broke halfway")
		case !errors.Is(err, errBroken):
			return err
		}
		r.again.Add(1)
		return fn(bytes.NewReader(data))
	})
}

// Deep verification hashes inside read callbacks that a retrying store may call again from the
// start: the hashes and range buffers start over, so the result is OK, not CORRUPT.
func TestDeepCallbackReinvoked(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	b := testbed.FileBackend(t)
	prefix := testbed.FreshPrefix("reinvoke")
	testbed.Seed(t, b.Open(t, prefix, nil), f)
	o := testbed.VerifyOptions()
	for _, rs := range []int64{256 << 10, 64 << 20} { // ranged reads, and one read per file
		o.RangeSize = rs
		var again atomic.Int64
		r := verify.Deep(testbed.Ctx(t), f.M, reinvoker{b.Open(t, prefix, nil), &again}, o)
		if r.Status != verify.ReplicaOK {
			t.Errorf("range size %d: %s", rs, testbed.Dump(r))
		}
		if n := again.Load(); n < int64(len(f.M.Files))/2 {
			t.Errorf("range size %d: only %d callbacks were called again", rs, n)
		}
	}
}
