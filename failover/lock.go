package failover

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"lifeboat/providers"
)

// LockKey is the lock object in the state store.
const LockKey = "failover/lock.json"

// Lock is the single-owner lock of failover runs. It is never deleted: a release marks it
// released, so that the fencing token keeps growing across owners.
type Lock struct {
	ID        string    `json:"id"`
	Holder    string    `json:"holder"` // user@host pid N
	Reason    string    `json:"reason"`
	Operation string    `json:"operation"`
	Since     time.Time `json:"since"`
	Expires   time.Time `json:"expires"`
	// Token is the fencing token: it grows by one with every new owner and is written into
	// every journal record.
	Token    int64  `json:"token"`
	Released bool   `json:"released,omitempty"`
	BrokenBy string `json:"broken_by,omitempty"`

	revision string
}

// LockHeldError says who holds the lock (exit 3).
type LockHeldError struct{ Lock Lock }

func (e *LockHeldError) Error() string {
	l := e.Lock
	return fmt.Sprintf("failover lock %s is held by %s since %s (%s: %q), until %s; if that run is dead: lifeboat failover unlock --id %s",
		l.ID, l.Holder, l.Since.Format(time.RFC3339), l.Operation, l.Reason, l.Expires.Format(time.RFC3339), l.ID)
}

// ErrLockLost: the lock was broken or taken over while this run held it.
var ErrLockLost = errors.New("failover lock lost")

// Locker takes and keeps the lock in a store.
type Locker struct {
	Store providers.Store
	TTL   time.Duration // expiry of one renewal; 0 means 60s
	Now   func() time.Time
}

func (l *Locker) ttl() time.Duration {
	if l.TTL > 0 {
		return l.TTL
	}
	return 60 * time.Second
}

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

// read returns the lock object and its revision; ok false when there is none.
func (l *Locker) read(ctx context.Context) (Lock, bool, error) {
	obj, err := l.Store.Stat(ctx, LockKey)
	if errors.Is(err, providers.ErrNotFound) {
		return Lock{}, false, nil
	}
	if err != nil {
		return Lock{}, false, fmt.Errorf("read lock: %w", err)
	}
	var data []byte
	err = l.Store.Read(ctx, LockKey, providers.ReadOptions{IfMatch: obj.Revision}, func(r io.Reader) error {
		b, err := io.ReadAll(io.LimitReader(r, 1<<20))
		data = b
		return err
	})
	if err != nil {
		return Lock{}, false, fmt.Errorf("read lock: %w", err)
	}
	var lk Lock
	if err := json.Unmarshal(data, &lk); err != nil {
		return Lock{}, false, fmt.Errorf("read lock %s: %v", LockKey, err)
	}
	lk.revision = obj.Revision
	return lk, true, nil
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

// Acquire takes the lock for holder, or returns a *LockHeldError naming who has it. An expired
// or released lock is taken over by compare-and-swap with the next fencing token.
func (l *Locker) Acquire(ctx context.Context, holder, operation, reason string) (*Lock, error) {
	for attempt := 0; attempt < 4; attempt++ {
		now := l.now()
		lk := &Lock{ID: newID(), Holder: holder, Reason: reason, Operation: operation, Since: now, Expires: now.Add(l.ttl()), Token: 1}
		cur, exists, err := l.read(ctx)
		if err != nil {
			return nil, err
		}
		if exists {
			if !cur.Released && now.Before(cur.Expires) {
				return nil, &LockHeldError{Lock: cur}
			}
			lk.Token = cur.Token + 1
			err = l.write(ctx, lk, cur.revision, false)
		} else {
			err = l.write(ctx, lk, "", true)
		}
		if errors.Is(err, providers.ErrPreconditionFailed) {
			continue // someone else moved first: look again
		}
		if err != nil {
			return nil, fmt.Errorf("take lock: %w", err)
		}
		return lk, nil
	}
	cur, _, err := l.read(ctx)
	if err != nil {
		return nil, err
	}
	return nil, &LockHeldError{Lock: cur}
}

// Renew extends the lock; ErrLockLost if it is no longer ours.
func (l *Locker) Renew(ctx context.Context, lk *Lock) error {
	next := *lk
	next.Expires = l.now().Add(l.ttl())
	if err := l.write(ctx, &next, lk.revision, false); err != nil {
		if errors.Is(err, providers.ErrPreconditionFailed) || errors.Is(err, providers.ErrNotFound) {
			return fmt.Errorf("%w: it was broken or taken over", ErrLockLost)
		}
		return fmt.Errorf("renew lock: %w", err)
	}
	*lk = next
	return nil
}

// Check verifies that lk is still the lock in the store (fencing, before each router write).
func (l *Locker) Check(ctx context.Context, lk *Lock) error {
	cur, ok, err := l.read(ctx)
	if err != nil {
		return err
	}
	if !ok || cur.revision != lk.revision || cur.Token != lk.Token || cur.Released {
		return fmt.Errorf("%w: token %d is no longer the holder", ErrLockLost, lk.Token)
	}
	if !l.now().Before(cur.Expires) {
		return fmt.Errorf("%w: expired at %s", ErrLockLost, cur.Expires.Format(time.RFC3339))
	}
	return nil
}

// Release marks the lock released (only while it is still ours).
func (l *Locker) Release(ctx context.Context, lk *Lock) error {
	next := *lk
	next.Released = true
	next.Expires = l.now()
	if err := l.write(ctx, &next, lk.revision, false); err != nil {
		if errors.Is(err, providers.ErrPreconditionFailed) {
			return fmt.Errorf("%w: not released, someone else holds it", ErrLockLost)
		}
		return fmt.Errorf("release lock: %w", err)
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
	if err := l.write(ctx, &next, cur.revision, false); err != nil {
		return cur, fmt.Errorf("break lock: %w", err)
	}
	return cur, nil
}
