package drills

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"lifeboat/fleet/router"
	"lifeboat/providers"
)

// maxFaultFile bounds what a file fault saves to put back at teardown.
const maxFaultFile = 256 << 20

// fileFault is a missing or corrupted file planted in one replica, with what puts it back.
type fileFault struct {
	f        *Fault
	store    providers.Store
	original []byte
}

// plant removes or corrupts the file, keeping the original bytes (bounded) to restore later;
// keep is given them before anything changes (the drill records them in the state store, so
// that a clean-up after a crash can put them back) and an error from it plants nothing.
func (ff *fileFault) plant(ctx context.Context, keep func([]byte) error) error {
	original, err := providers.ReadSmall(ctx, ff.store, ff.f.Path, providers.ReadOptions{}, maxFaultFile)
	if err != nil {
		return fmt.Errorf("fault %q: read %s in %s: %w", ff.f.Name, ff.f.Path, ff.store, err)
	}
	ff.original = original
	if err := keep(ff.original); err != nil {
		return fmt.Errorf("fault %q: record its undo before injecting it: %w", ff.f.Name, err)
	}
	kind, _ := kindOfFault(ff.f.Kind)
	if kind.plant == nil {
		return fmt.Errorf("fault %q: kind %s changes no replica file", ff.f.Name, ff.f.Kind)
	}
	bad, remove, err := kind.plant(bytes.Clone(ff.original))
	switch {
	case err != nil:
		return fmt.Errorf("fault %q: %s: %w", ff.f.Name, ff.f.Path, err)
	case remove:
		err = ff.store.Delete(ctx, ff.f.Path, providers.DeleteOptions{})
	default:
		_, err = ff.store.Write(ctx, ff.f.Path, bytes.NewReader(bad), providers.WriteOptions{Size: int64(len(bad))})
	}
	if err != nil {
		return fmt.Errorf("fault %q: plant in %s: %w", ff.f.Name, ff.store, err)
	}
	return nil
}

// faultRouter is the router-unreachable fault: after afterStep successful changes the router
// answers nothing for duration. driver is the fleet's driver with the fault applied.
type faultRouter struct {
	Driver    router.Driver // the fleet's driver
	afterStep int
	duration  time.Duration
	now       func() time.Time

	mu        sync.Mutex
	applies   int
	downUntil time.Time
	downAt    time.Time
	triggered bool
	refused   int // calls answered with unreachable
}

func (fr *faultRouter) down() error {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if fr.now().Before(fr.downUntil) {
		fr.refused++
		return fmt.Errorf("%s: %w (drill fault router-unreachable)", fr.Driver, router.ErrRouterUnreachable)
	}
	return nil
}

// driver is the fleet's driver with the fault applied (router.Wrap: it keeps exactly the
// driver's capabilities, which the executor asks by type assertion).
func (fr *faultRouter) driver() router.Driver {
	return router.Wrap(fr.Driver, router.Overrides{Before: fr.down, After: fr.applied})
}

// applied counts a successful change; the afterStep-th starts the outage.
func (fr *faultRouter) applied() {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.applies++
	if fr.duration > 0 && !fr.triggered && fr.applies >= fr.afterStep {
		fr.downAt = fr.now()
		fr.triggered, fr.downUntil = true, fr.downAt.Add(fr.duration)
	}
}

// wentDown is when the outage started (zero: never).
func (fr *faultRouter) wentDown() time.Time {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.downAt
}

func (fr *faultRouter) refusals() int {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.refused
}

// errKilled is what a killed orchestrator's store and router calls return: a dead process
// writes nothing more, not even the release of its lock.
var errKilled = fmt.Errorf("orchestrator killed (drill fault kill-mid-ramp)")

// process is one orchestrator process's view of the state store and the router; kill makes
// both dead for it, as SIGKILL would.
type process struct {
	dead atomic.Bool
}

type processStore struct {
	providers.Store
	p *process
}

func (s processStore) List(ctx context.Context, dir string, fn func(providers.Object) error) error {
	if s.p.dead.Load() {
		return errKilled
	}
	return s.Store.List(ctx, dir, fn)
}

func (s processStore) Stat(ctx context.Context, key string) (providers.Object, error) {
	if s.p.dead.Load() {
		return providers.Object{}, errKilled
	}
	return s.Store.Stat(ctx, key)
}

func (s processStore) Read(ctx context.Context, key string, o providers.ReadOptions, fn func(io.Reader) error) error {
	if s.p.dead.Load() {
		return errKilled
	}
	return s.Store.Read(ctx, key, o, fn)
}

func (s processStore) Write(ctx context.Context, key string, r io.Reader, o providers.WriteOptions) (providers.Object, error) {
	if s.p.dead.Load() {
		return providers.Object{}, errKilled
	}
	return s.Store.Write(ctx, key, r, o)
}

func (s processStore) Delete(ctx context.Context, key string, o providers.DeleteOptions) error {
	if s.p.dead.Load() {
		return errKilled
	}
	return s.Store.Delete(ctx, key, o)
}

// Close does not close the shared store: the next process uses it.
func (s processStore) Close() error { return nil }

// processRouter is d as process p sees it: dead once p is killed (router.Wrap keeps exactly d's
// capabilities).
func processRouter(d router.Driver, p *process) router.Driver {
	return router.Wrap(d, router.Overrides{Before: func() error {
		if p.dead.Load() {
			return errKilled
		}
		return nil
	}})
}
