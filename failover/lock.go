package failover

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"lifeboat/fleet"
	"lifeboat/internal/base/lockowner"
	"lifeboat/internal/base/wait"
	"lifeboat/providers"
)

// LockKey is the lock object in the state store.
const LockKey = "failover/lock.json"

// Lock is the single-owner lock of failover runs. It is never deleted: a release marks it
// released, so that the fencing token keeps growing across owners.
//
// Since and Expires are the holder's wall clock, shown to people and never used to judge expiry:
// the holder stops by its own monotonic lease (the start of its last successful acquire or
// renewal + TTL − TTL/4), and a taker counts TTL on its own monotonic clock from when it first
// saw this exact record (revision, id, token, renewal) unchanged.
type Lock struct {
	ID        string    `json:"id"`
	Holder    string    `json:"holder"` // user@host pid N
	Reason    string    `json:"reason"`
	Operation string    `json:"operation"`
	Since     time.Time `json:"since"`
	Expires   time.Time `json:"expires"`
	// TTLMS is the holder's lock TTL in milliseconds: a taker waits at least this long.
	TTLMS int64 `json:"ttl_ms,omitempty"`
	// Renewal counts the holder's renewals: every renewal changes the record.
	Renewal int64 `json:"renewal"`
	// Owner is the holder's process, so that a lock whose holder provably died on this host
	// (JudgeOwner: Gone) is taken over at once; any other is waited out.
	Owner *lockowner.Owner `json:"owner,omitempty"`
	// Token is the fencing token: it grows by one with every new owner and is written into
	// every journal record.
	Token    int64  `json:"token"`
	Released bool   `json:"released,omitempty"`
	BrokenBy string `json:"broken_by,omitempty"`

	revision string
	// lease is the holder's own deadline on its monotonic clock; zero for a lock only read.
	lease time.Time
	// tookOver is the record this lock replaced when its holder was dead or silent; why says how
	// that was judged.
	tookOver *Lock
	why      string
}

// LockHeldError says who holds the lock (a refusal).
type LockHeldError struct {
	Lock Lock
	// Live: the record changed while it was watched (the holder renewed it).
	Live bool
	// Dead says why the holder is known dead (a process on this host that is gone); "" unknown.
	Dead string
}

func (e *LockHeldError) Error() string {
	l := e.Lock
	id := providers.Sanitize(l.ID, 64)
	tail := fmt.Sprintf("if that run is dead: `lifeboat failover resume` takes the lock over once its record has stayed unchanged for its TTL, or break it: lifeboat failover unlock --id %s", id)
	switch {
	case e.Live:
		tail = "it renewed the lock while this process watched: its holder is alive"
	case e.Dead != "":
		tail = "its holder is dead (" + providers.Sanitize(e.Dead, 200) + "): `lifeboat failover resume` takes the lock over at once and carries its run on, `lifeboat failover abort` takes it over at once and undoes it"
	}
	// The record is a peer's text: each field is sanitised (providers.Sanitize).
	return fmt.Sprintf("failover lock %s is held by %s since %s (%s: %q), renewed until %s by its clock; %s",
		id, providers.Sanitize(l.Holder, 200), l.Since.Format(time.RFC3339), providers.Sanitize(l.Operation, 64),
		providers.Sanitize(l.Reason, 500), l.Expires.Format(time.RFC3339), tail)
}

// ErrLockLost: the lock was broken or taken over while this run held it, or its lease ran out on
// this process's clock.
var ErrLockLost = errors.New("failover lock lost")

// Locker takes and keeps the lock in a store.
type Locker struct {
	Store providers.Store
	TTL   time.Duration // expiry of one renewal; 0 means fleet.DefaultLockTTL
	Now   func() time.Time
	// Wait: a lock held by a holder that is not known dead is watched until its record has stayed
	// unchanged for its TTL on this process's monotonic clock, then taken over (a record that
	// changes meanwhile is a live holder: *LockHeldError). Without Wait such a lock is reported
	// held at once.
	Wait bool
	// TakeDead: a lock whose holder is a dead process on this host is taken over at once even
	// without Wait (abort: the operator asked to undo what that run did).
	TakeDead bool
	// Watching, when set, is told when Wait starts watching a held lock, and for how long.
	Watching func(held Lock, d time.Duration)
	// Owners judges whether a holder's process still runs (nil: this host, for real).
	Owners *lockowner.Checker
}

func (l *Locker) owners() *lockowner.Checker {
	if l.Owners != nil {
		return l.Owners
	}
	return &lockowner.Checker{}
}

func (l *Locker) ttl() time.Duration {
	if l.TTL > 0 {
		return l.TTL
	}
	return fleet.DefaultLockTTL
}

// margin is how long before TTL the holder's own lease ends: the slack for clock-rate drift
// between machines, the store's delay in making a write visible, and one router call in flight.
func (l *Locker) margin() time.Duration { return l.ttl() / 4 }

// leaseFrom is the holder's deadline when the write that acquired or renewed the lock was sent at
// start (time.Now, which carries the monotonic reading).
func (l *Locker) leaseFrom(start time.Time) time.Time { return start.Add(l.ttl() - l.margin()) }

func (l *Locker) now() time.Time {
	if l.Now != nil {
		return l.Now().UTC()
	}
	return time.Now().UTC()
}

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// maxLockBytes bounds the lock object (a real one is a few hundred bytes).
const maxLockBytes = 64 << 10

// ErrLockCorrupt is matched by a *LockCorruptError.
var ErrLockCorrupt = errors.New("failover lock object is corrupt")

// LockCorruptError: the lock object cannot be read as a lock (not JSON, too large, no id or
// token). Nobody can hold such a lock — a holder's renewal compares the revision it wrote — so
// break-glass unlock may replace it, by the pseudo-id ID names, bound to the exact object seen.
type LockCorruptError struct {
	Key      string
	Revision string
	Err      error
}

// ID is the id `lifeboat failover unlock --id` takes to break this corrupt object (and no other
// version of it).
func (e *LockCorruptError) ID() string {
	h := sha256.Sum256([]byte(e.Revision))
	return "corrupt-" + hex.EncodeToString(h[:6])
}

func (e *LockCorruptError) Error() string {
	return fmt.Sprintf("failover lock %s is corrupt (%v); nothing can hold it: after checking no failover is running, replace it with: lifeboat failover unlock --id %s", e.Key, e.Err, e.ID())
}
func (e *LockCorruptError) Unwrap() error        { return e.Err }
func (e *LockCorruptError) Is(target error) bool { return target == ErrLockCorrupt }

// read returns the lock object and its revision; ok false when there is none. A lock object that
// is not a lock is a *LockCorruptError.
func (l *Locker) read(ctx context.Context) (Lock, bool, error) {
	// Stat, then a read conditional on that revision: a renewal landing in between makes the
	// read fail its precondition. That is a live holder, not an error; look again.
	for attempt := 0; ; attempt++ {
		lk, ok, err := l.readOnce(ctx)
		if !errors.Is(err, providers.ErrPreconditionFailed) || attempt == 4 {
			return lk, ok, err
		}
	}
}

func (l *Locker) readOnce(ctx context.Context) (Lock, bool, error) {
	obj, err := l.Store.Stat(ctx, LockKey)
	if errors.Is(err, providers.ErrNotFound) {
		return Lock{}, false, nil
	}
	if err != nil {
		return Lock{}, false, fmt.Errorf("read lock: %w", err)
	}
	var lk Lock
	err = providers.ReadJSON(ctx, l.Store, LockKey, providers.ReadOptions{IfMatch: obj.Revision}, maxLockBytes, &lk)
	switch {
	case errors.Is(err, providers.ErrNotJSON), errors.Is(err, providers.ErrObjectTooLarge):
		return Lock{}, false, &LockCorruptError{Key: LockKey, Revision: obj.Revision, Err: err}
	case err != nil:
		return Lock{}, false, fmt.Errorf("read lock: %w", err)
	case lk.ID == "" || lk.Token < 1:
		return Lock{}, false, &LockCorruptError{Key: LockKey, Revision: obj.Revision, Err: errors.New("no id or fencing token")}
	}
	lk.revision = obj.Revision
	return lk, true, nil
}

// BreakCorrupt replaces a corrupt lock object (the exact revision the pseudo-id id names) by a
// released lock whose fencing token is token (the caller's floor: past every token journaled).
func (l *Locker) BreakCorrupt(ctx context.Context, id, by string, token int64) (Lock, error) {
	_, _, err := l.read(ctx)
	var ce *LockCorruptError
	if !errors.As(err, &ce) {
		if err == nil {
			return Lock{}, fmt.Errorf("the lock is not corrupt (any more): nothing broken; unlock it by its id")
		}
		return Lock{}, err
	}
	if ce.ID() != id {
		return Lock{}, fmt.Errorf("the corrupt lock object's id is %s, not %s: nothing broken (it changed since)", ce.ID(), id)
	}
	now := l.now()
	next := Lock{ID: newID(), Holder: "(corrupt lock object)", Reason: ce.Err.Error(), Operation: "unlock", Since: now, Expires: now,
		Token: max(token, 1), Released: true, BrokenBy: by}
	if err := l.write(ctx, &next, ce.Revision, false); err != nil && !l.ours(ctx, &next) {
		return Lock{}, fmt.Errorf("break corrupt lock: %w", err)
	}
	return next, nil
}

func (l *Locker) write(ctx context.Context, lk *Lock, ifMatch string, create bool) error {
	b, _ := json.MarshalIndent(lk, "", "  ")
	obj, err := l.Store.Write(ctx, LockKey, bytes.NewReader(b), providers.WriteOptions{
		Size: int64(len(b)), IfNotExists: create, IfMatch: ifMatch, ContentType: "application/json"})
	if err != nil {
		return err
	}
	lk.revision = obj.Revision
	return nil
}

// Read returns the current lock (released or not); ok false when none was ever taken.
func (l *Locker) Read(ctx context.Context) (Lock, bool, error) { return l.read(ctx) }

// sameRecord: b is exactly the record a was (nothing wrote the lock in between).
func sameRecord(a, b Lock) bool {
	return a.revision == b.revision && a.ID == b.ID && a.Token == b.Token && a.Renewal == b.Renewal && a.Released == b.Released
}

// recordTTL is how long a taker watches cur unchanged: the longer of its holder's TTL and ours.
func (l *Locker) recordTTL(cur Lock) time.Duration {
	d := l.ttl()
	if cur.TTLMS > 0 && cur.TTLMS < math.MaxInt64/int64(time.Millisecond) {
		d = max(d, time.Duration(cur.TTLMS)*time.Millisecond)
	}
	return d
}

// ErrTokenExhausted: the fencing token cannot grow any more (refused: it never wraps).
var ErrTokenExhausted = errors.New("fencing token exhausted")

// Acquire takes the lock for holder, or returns a *LockHeldError naming who has it. A released
// lock, or one whose holder is a dead process on this host, is taken over at once; with Wait, a
// lock whose record stays unchanged for its TTL on this process's monotonic clock is taken over
// too. Each take-over is a compare-and-swap on the record seen, with the next fencing token. A
// lost answer to our own write (the write landed, the retry saw a precondition fail) is
// recognised by the lock's id as ours.
func (l *Locker) Acquire(ctx context.Context, holder, operation, reason string) (*Lock, error) {
	var watched *Lock
	var watchedSince time.Time
	for conflicts := 0; conflicts < 4; {
		cur, exists, err := l.read(ctx)
		if err != nil {
			return nil, err
		}
		now := l.now()
		lk := &Lock{ID: newID(), Holder: holder, Reason: reason, Operation: operation, Since: now, Expires: now.Add(l.ttl()),
			TTLMS: l.ttl().Milliseconds(), Owner: lockowner.ThisOwner(), Token: 1}
		if exists {
			if cur.Token < 0 || cur.Token == math.MaxInt64 {
				return nil, fmt.Errorf("%w: %s has fencing token %d: the next owner's would wrap; nothing taken (a new lock needs a new state store or a fresh %s)", ErrTokenExhausted, LockKey, cur.Token, LockKey)
			}
			switch dead, why := l.owners().IsGone(cur.Owner); {
			case cur.Released:
			case dead && (l.Wait || l.TakeDead):
				lk.tookOver, lk.why = &cur, why
			case !l.Wait:
				return nil, &LockHeldError{Lock: cur, Dead: why}
			default:
				if watched != nil && !sameRecord(*watched, cur) {
					return nil, &LockHeldError{Lock: cur, Live: true}
				}
				ttl := l.recordTTL(cur)
				if watched == nil {
					watched, watchedSince = &cur, time.Now()
					if l.Watching != nil {
						l.Watching(cur, ttl)
					}
				}
				if left := ttl - time.Since(watchedSince); left > 0 {
					if err := wait.Sleep(ctx, min(left, max(ttl/20, 20*time.Millisecond), 2*time.Second)); err != nil {
						return nil, err
					}
					continue
				}
				lk.tookOver, lk.why = &cur, fmt.Sprintf("its record stayed unchanged for %s on this host's monotonic clock", ttl.Round(time.Millisecond))
			}
			lk.Token = cur.Token + 1
		}
		start := time.Now()
		if exists {
			err = l.write(ctx, lk, cur.revision, false)
		} else {
			err = l.write(ctx, lk, "", true)
		}
		if err != nil && l.ours(ctx, lk) {
			err = nil // our write landed and its answer was lost
		}
		if errors.Is(err, providers.ErrPreconditionFailed) {
			conflicts++
			watched = nil
			continue // someone else moved first: look again
		}
		if err != nil {
			return nil, fmt.Errorf("take lock: %w", err)
		}
		lk.lease = l.leaseFrom(start)
		return lk, nil
	}
	cur, _, err := l.read(ctx)
	if err != nil {
		return nil, err
	}
	return nil, &LockHeldError{Lock: cur}
}

// ours re-reads the lock after a failed write of lk: true (and lk's revision updated) when the
// store holds exactly lk's record — the write landed and only its answer was lost.
func (l *Locker) ours(ctx context.Context, lk *Lock) bool {
	cur, ok, err := l.read(ctx)
	if err != nil || !ok || cur.ID != lk.ID || cur.Token != lk.Token || cur.Renewal != lk.Renewal || cur.Released != lk.Released {
		return false
	}
	lk.revision = cur.revision
	return true
}

// Renew extends the lock; ErrLockLost if it is no longer ours. A renewal whose answer was lost
// is recognised as ours; any other failure leaves the lease running out on its own.
func (l *Locker) Renew(ctx context.Context, lk *Lock) error {
	next := *lk
	next.Renewal++
	next.Expires = l.now().Add(l.ttl())
	start := time.Now()
	err := l.write(ctx, &next, lk.revision, false)
	if err != nil && !l.ours(ctx, &next) {
		cur, ok, rerr := l.read(ctx)
		switch {
		case rerr != nil:
			return fmt.Errorf("renew lock: %w", err)
		case !ok || cur.ID != lk.ID || cur.Token != lk.Token || cur.Released:
			return fmt.Errorf("%w: it was broken or taken over (now %s, token %d)", ErrLockLost, cur.Holder, cur.Token)
		}
		// Still ours, at a revision an earlier renewal wrote whose answer was lost: renew from it.
		lk.revision, lk.Renewal = cur.revision, cur.Renewal
		return fmt.Errorf("renew lock: %v (the record is still ours; retrying)", err)
	}
	next.lease = l.leaseFrom(start)
	*lk = next
	return nil
}

// fence is the holder's own check, without the store: its monotonic lease has not run out.
func (lk *Lock) fence() error {
	if lk.lease.IsZero() || !time.Now().Before(lk.lease) {
		return fmt.Errorf("%w: token %d: its lease ran out on this host's clock (no renewal succeeded within lock_ttl minus the safety margin)", ErrLockLost, lk.Token)
	}
	return nil
}

// Check verifies that lk is still the lock in the store and that its lease has not run out on
// this host's clock (fencing, before each router write).
func (l *Locker) Check(ctx context.Context, lk *Lock) error {
	if err := lk.fence(); err != nil {
		return err
	}
	cur, ok, err := l.read(ctx)
	if err != nil {
		return err
	}
	if !ok || cur.ID != lk.ID || cur.Token != lk.Token || cur.Released {
		return fmt.Errorf("%w: token %d is no longer the holder", ErrLockLost, lk.Token)
	}
	return nil
}

// Release marks the lock released (only while it is still ours).
func (l *Locker) Release(ctx context.Context, lk *Lock) error {
	next := *lk
	next.Released = true
	next.Expires = l.now()
	err := l.write(ctx, &next, lk.revision, false)
	if err != nil && !l.ours(ctx, &next) {
		cur, ok, rerr := l.read(ctx)
		if rerr == nil && ok && cur.ID == lk.ID && cur.Token == lk.Token && !cur.Released {
			next.Renewal = cur.Renewal
			err = l.write(ctx, &next, cur.revision, false) // ours at a revision whose answer was lost
		}
		if err != nil && !l.ours(ctx, &next) {
			if errors.Is(err, providers.ErrPreconditionFailed) {
				return fmt.Errorf("%w: not released, someone else holds it", ErrLockLost)
			}
			return fmt.Errorf("release lock: %w", err)
		}
	}
	*lk = next
	return nil
}

// Break releases the lock with the exact id, whoever holds it (break-glass); by names who.
func (l *Locker) Break(ctx context.Context, id, by string) (Lock, error) {
	cur, ok, err := l.read(ctx)
	if err != nil {
		return Lock{}, err
	}
	if !ok {
		return Lock{}, fmt.Errorf("no failover lock exists")
	}
	if cur.ID != id {
		return cur, fmt.Errorf("the lock's id is %s, not %s: nothing broken (held by %s since %s)", cur.ID, id, cur.Holder, cur.Since.Format(time.RFC3339))
	}
	if cur.Released {
		return cur, fmt.Errorf("lock %s is already released", id)
	}
	next := cur
	next.Released, next.BrokenBy, next.Expires = true, by, l.now()
	if err := l.write(ctx, &next, cur.revision, false); err != nil && !l.ours(ctx, &next) {
		return cur, fmt.Errorf("break lock: %w", err)
	}
	return cur, nil
}
