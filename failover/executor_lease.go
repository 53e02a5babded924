package failover

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/lockowner"
)

// lockTTL is the executor's LockTTL, else the fleet's failover.lock_ttl.
func (e *Executor) lockTTL() time.Duration {
	if e.LockTTL > 0 {
		return e.LockTTL
	}
	if e.Fleet != nil && e.Fleet.Failover.LockTTL > 0 {
		return e.Fleet.Failover.LockTTL
	}
	return fleet.DefaultLockTTL
}

func (e *Executor) locker() *Locker {
	return &Locker{Store: e.Store, TTL: e.lockTTL(), Now: e.Now, Owners: e.Owners}
}

func (e *Executor) owners() *lockowner.Checker {
	if e.Owners != nil {
		return e.Owners
	}
	return &lockowner.Checker{}
}

// session is one process's hold on the lock, renewed in the background.
type session struct {
	e *Executor
	// mu guards lock and is held across a whole Renew (store write, then the update of lock) and
	// a whole Check: a Check between Renew's write and its update would compare the store's new
	// revision with the old one and wrongly conclude that the lock was lost.
	mu   sync.Mutex
	lock *Lock
	// leaseMu guards lease, the holder's own deadline on the monotonic clock (the start of the
	// last successful acquire or renewal + TTL − TTL/4): fence reads it without waiting for a
	// renewal's store write.
	leaseMu sync.Mutex
	lease   time.Time
	// seen is the router's version as this run last read it back (or read it to plan): every
	// router write is conditional on it. Only the run's goroutine touches it.
	seen router.RouterVersion
	// lastRead is what this run last read back from the router (after its last write, or when
	// it took over the run); a router that reads otherwise later has drifted.
	lastRead *router.RouterState
	// kept is the newest entry of each region this run has read or found in the journal
	// (router.Kept), handed to the driver with every state applied.
	kept router.Kept
	// expire ends ctx when the lease runs out (reset by every successful renewal).
	expire *time.Timer
	j      *Journal
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// takeOver is which held locks begin takes over.
type takeOver int

const (
	takeNone   takeOver = iota // none: a held lock is refused (*LockHeldError)
	takeDead                   // a dead holder's on this host, at once (abort)
	takeSilent                 // that, or one watched unchanged for its TTL (resume)
)

// begin takes the lock (take: which held ones it takes over) and starts its renewal; run ""
// names a new run by the lock's fencing token. A take-over of a dead or silent holder's lock is
// journaled first.
func (e *Executor) begin(ctx context.Context, operation, reason, run string, next int, take takeOver) (*session, error) {
	l := e.locker()
	l.Wait = take == takeSilent
	l.TakeDead = take == takeDead
	l.Watching = func(held Lock, d time.Duration) {
		e.log().Info("the failover lock is held; watching its record before taking it over (any renewal means its holder is alive)",
			"lock", held.ID, "holder", held.Holder, "token", held.Token, "for", d.String())
	}
	lk, err := l.Acquire(ctx, e.holder(), operation, reason)
	if err != nil {
		return nil, err
	}
	if run == "" {
		run = NewRunID(lk.Token, e.now())
	}
	sctx, cancel := context.WithCancelCause(ctx)
	s := &session{e: e, lock: lk, lease: lk.lease, ctx: sctx, cancel: cancel, done: make(chan struct{})}
	s.j = &Journal{Store: e.Store, Run: run, Holder: lk.Holder, Token: lk.Token, Fleet: e.fleetID(), next: next, Now: e.Now, OnRecord: e.OnRecord, fence: s.fence, current: s.checkLock}
	ttl := l.ttl()
	// The lease is enforced on its own timer, whatever the run or the renewal is doing: a store
	// that stops answering holds a store call, never the holder. When the lease runs out the
	// session's context ends, which ends every store and router call made under it.
	s.expire = time.AfterFunc(time.Until(lk.lease), func() {
		cancel(fmt.Errorf("%w: token %d: its lease ran out on this host's clock (no renewal succeeded within lock_ttl %s minus the safety margin: the state store did not answer in time); stopped, nothing more is written", ErrLockLost, lk.Token, ttl))
	})
	go func() {
		defer close(s.done)
		defer s.expire.Stop()
		t := time.NewTicker(ttl / 5)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
				if err := s.fence(); err != nil {
					cancel(err) // the lease ran out on this host's clock: stop whatever the run does
					return
				}
				s.mu.Lock()
				err := l.Renew(sctx, s.lock) // updates *s.lock only on success; sctx ends with the lease
				lease := s.lock.lease
				s.mu.Unlock()
				if err != nil {
					if errors.Is(err, ErrLockLost) {
						cancel(err)
						return
					}
					e.log().Warn("lock renewal failed; retrying (the run goes on until its own lease runs out)", "err", err)
					continue
				}
				s.leaseMu.Lock()
				if s.ctx.Err() == nil {
					s.lease = lease
					s.expire.Reset(time.Until(lease))
				}
				s.leaseMu.Unlock()
			}
		}
	}()
	if prev := lk.tookOver; prev != nil {
		detail := fmt.Sprintf("took over lock %s of %s (token %d, %s) with token %d: %s", prev.ID, prev.Holder, prev.Token, prev.Operation, lk.Token, lk.why)
		e.log().Warn("failover lock taken over", "detail", detail)
		if _, err := s.j.Append(sctx, Record{Kind: RecTakeover, Reason: reason, Detail: detail}); err != nil {
			s.end()
			return nil, err
		}
	}
	return s, nil
}

// fence is checked immediately before every router call: the lock was not found lost, and its
// lease has not run out on this host's monotonic clock, whether or not the last renewal answered.
func (s *session) fence() error {
	if c := context.Cause(s.ctx); c != nil && errors.Is(c, ErrLockLost) {
		return c
	}
	s.leaseMu.Lock()
	lease := s.lease
	s.leaseMu.Unlock()
	if !time.Now().Before(lease) {
		return fmt.Errorf("%w: token %d: its lease ran out on this host's clock (no renewal succeeded within lock_ttl minus the safety margin); nothing more is written", ErrLockLost, s.j.Token)
	}
	return nil
}

// checkLock verifies that the lock is still ours in the store and by its own lease (fencing,
// before each step's intent), never in the middle of a renewal.
func (s *session) checkLock(ctx context.Context) error {
	if err := s.fence(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *s.lock
	cur.lease = time.Now().Add(time.Hour) // the lease is the session's (fence, above)
	return s.e.locker().Check(ctx, &cur)
}

// observe reads the router and remembers its version: the next write is conditional on it.
func (s *session) observe(ctx context.Context) (router.RouterState, error) {
	rs, v, err := s.e.readVersioned(ctx)
	if err == nil {
		s.seen = v
		s.kept = rs.Kept.Clone().Merge(s.kept) // what the router holds now is the newest
	}
	return rs, err
}

// end stops renewal and releases the lock (with a fresh context: release even when cancelled),
// waiting at most one TTL for the store: a holder whose store stopped answering still exits.
func (s *session) end() {
	s.cancel(nil)
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), min(30*time.Second, s.e.lockTTL()))
	defer cancel()
	if err := s.e.locker().Release(ctx, s.lock); err != nil {
		s.e.log().Warn("lock not released", "err", err)
	}
}

func (s *session) err(err error) error {
	if c := context.Cause(s.ctx); c != nil && errors.Is(c, ErrLockLost) {
		return c
	}
	return err
}

// Unlock breaks the lock with the exact id and journals it.
func (e *Executor) Unlock(ctx context.Context, id, reason string) (Lock, error) {
	by := e.holder()
	lk, err := e.locker().Break(ctx, id, by)
	var corrupt *LockCorruptError
	if errors.As(err, &corrupt) && id == corrupt.ID() {
		lk, err = e.locker().BreakCorrupt(ctx, id, by, e.tokenFloor(ctx))
	}
	if err != nil {
		return lk, err
	}
	// Journaled in the newest run, past every object there (a junk one included).
	runs, err := Runs(ctx, e.Store)
	if err == nil && len(runs) > 0 {
		var rj RunJournal
		run := runs[len(runs)-1]
		if rj, err = ScanRun(ctx, e.Store, run); err != nil {
			return lk, fmt.Errorf("lock %s released, but not journaled: %w", lk.ID, err)
		}
		j := &Journal{Store: e.Store, Run: run, Holder: by, Token: lk.Token, next: rj.Next, Now: e.Now}
		_, err = j.Append(ctx, Record{Kind: RecUnlock, Reason: reason, Detail: fmt.Sprintf("lock %s of %s (since %s, token %d) broken by %s", lk.ID, lk.Holder, lk.Since.Format(time.RFC3339), lk.Token, by)})
	}
	return lk, err
}

// tokenFloor is the fencing token a replacement of a corrupt lock takes: past the newest run's
// (its id starts with the token it was taken with) and every token its records carry.
func (e *Executor) tokenFloor(ctx context.Context) int64 {
	runs, err := Runs(ctx, e.Store)
	if err != nil || len(runs) == 0 {
		return 1
	}
	run := runs[len(runs)-1]
	floor := runOrder(run)
	if j, err := ScanRun(ctx, e.Store, run); err == nil {
		for _, r := range j.Records {
			floor = max(floor, r.Token)
		}
	}
	return max(floor, 0) + 1
}

// ReadLock reads the failover lock as it is in the store (ok false: there is none).
func (e *Executor) ReadLock(ctx context.Context) (Lock, bool, error) { return e.locker().Read(ctx) }
