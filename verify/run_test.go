//go:build integration

package verify_test

import (
	"context"
	"errors"
	"testing"

	"lifeboat/internal/testbed"
	"lifeboat/providers"
	"lifeboat/verify"
)

// heldList is a Store whose List signals that it has started and then waits for its context, or
// for release to close, before listing: a listing still under way.
type heldList struct {
	providers.Store
	started chan struct{}
	release chan struct{}
	ended   chan error // what the listing's context said, once it returned
}

func (h heldList) List(ctx context.Context, dir string, fn func(providers.Object) error) error {
	close(h.started)
	select {
	case <-ctx.Done():
		h.ended <- ctx.Err()
		return ctx.Err()
	case <-h.release:
	}
	err := h.Store.List(ctx, dir, fn)
	h.ended <- err
	return err
}

func newHeld(s providers.Store) heldList {
	return heldList{Store: s, started: make(chan struct{}), release: make(chan struct{}), ended: make(chan error, 1)}
}

// A Run lists each replica before it has the manifest and then gives the verdicts Replicas
// gives; the listing really is under way before Finish is called.
func TestRunListsBeforeTheManifest(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	b := testbed.FileBackend(t)
	prefix := testbed.FreshPrefix("run")
	testbed.Seed(t, b.Open(t, prefix, nil), f)
	for _, mode := range []verify.Mode{verify.ModeQuick, verify.ModeDeep} {
		held := newHeld(b.Open(t, prefix, nil))
		plain := b.Open(t, prefix, nil)
		run := verify.NewRun(testbed.Ctx(t), 2, mode, testbed.VerifyOptions())
		run.Start(1, plain)
		run.Start(0, held)
		<-held.started // before Finish: nothing waits for the manifest
		close(held.release)
		rep := run.Finish(f.M)
		if err := <-held.ended; err != nil {
			t.Fatalf("%s: listing: %v", mode, err)
		}
		want := verify.Replicas(testbed.Ctx(t), f.M, []providers.Store{held.Store, plain}, mode, testbed.VerifyOptions())
		if rep.Mode != string(mode) || len(rep.Replicas) != 2 {
			t.Fatalf("%s: report %+v", mode, rep)
		}
		for i, r := range rep.Replicas {
			// Local files are UNVERIFIED by a quick verification, OK by a deep one.
			if r.Status != want.Replicas[i].Status || r.Counts[verify.StatusOK] != want.Replicas[i].Counts[verify.StatusOK] ||
				len(r.Files) != len(f.M.Files) || (mode == verify.ModeDeep && r.Status != verify.ReplicaOK) {
				t.Errorf("%s replica %d: %s\nReplicas gives: %s", mode, i, testbed.Dump(r), testbed.Dump(want.Replicas[i]))
			}
		}
	}
}

// Cancel (a bad manifest, a bad URL) stops a listing under way and returns once it has ended; a
// replica started after it is not listed at all.
func TestRunCancelStopsListings(t *testing.T) {
	t.Parallel()
	b := testbed.FileBackend(t)
	held := newHeld(b.Open(t, testbed.FreshPrefix("cancel"), nil))
	late := newHeld(b.Open(t, testbed.FreshPrefix("late"), nil))
	run := verify.NewRun(testbed.Ctx(t), 2, verify.ModeQuick, testbed.VerifyOptions())
	run.Start(0, held)
	<-held.started
	run.Cancel()
	select {
	case err := <-held.ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("listing ended with %v, want context.Canceled", err)
		}
	default:
		t.Fatal("Cancel returned with the listing still under way")
	}
	run.Start(1, late)
	run.Cancel() // twice is harmless
	select {
	case <-late.started:
		t.Error("a replica started after Cancel was listed")
	default:
	}
}

// Finish with a replica never started panics rather than report a replica it did not check.
func TestRunFinishNeedsEveryReplica(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	run := verify.NewRun(testbed.Ctx(t), 2, verify.ModeQuick, testbed.VerifyOptions())
	run.Start(0, testbed.FileBackend(t).Open(t, testbed.FreshPrefix("one"), nil))
	defer func() {
		if recover() == nil {
			t.Error("Finish with replica 1 never started did not panic")
		}
	}()
	run.Finish(f.M)
}
