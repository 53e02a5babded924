package failover

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"lifeboat/internal/base/wait"
	"lifeboat/providers"
)

// AbortRequestKey is where a second operator asks the run holding the lock to abort
// (`lifeboat failover abort` while a run goes on, as `kubectl argo rollouts abort`).
const AbortRequestKey = "failover/abort-request.json"

// maxAbortRequestBytes bounds an abort request object.
const maxAbortRequestBytes = 64 << 10

// AbortRequest asks the holder of the lock with Token to abort: between steps it journals who
// asked and why, and steps back to the baseline, ramped and under the same rules.
//
// The request is judged by Token alone (and LockID, by its requester): Time is the requester's
// wall clock, shown to people and never compared with anything, so a requester whose clock is
// off is neither ignored nor applied to another run. Tokens only grow, so a request left behind
// by an earlier run (its token lower) is never honoured by a later one.
type AbortRequest struct {
	By     string    `json:"by"`
	Reason string    `json:"reason"`
	Time   time.Time `json:"time"`  // the requester's clock: shown, never judged
	Token  int64     `json:"token"` // the fencing token of the run it is for
	LockID string    `json:"lock_id"`
}

// RequestAbort writes an abort request for the run holding lock held: its holder honours it
// between steps. The request names the lock's token, so that it never aborts a later run.
func (e *Executor) RequestAbort(ctx context.Context, held Lock, reason string) (AbortRequest, error) {
	req := AbortRequest{By: e.holder(), Reason: reason, Time: e.now(), Token: held.Token, LockID: held.ID}
	b, err := json.Marshal(req)
	if err != nil {
		return req, err
	}
	if _, err := e.Store.Write(ctx, AbortRequestKey, bytes.NewReader(b), providers.WriteOptions{}); err != nil {
		return req, fmt.Errorf("write the abort request: %w", err)
	}
	return req, nil
}

// abortRequested reads an abort request for this session's run (nil: none). A request for
// another token (an older run's) is ignored.
func (s *session) abortRequested(ctx context.Context) (*AbortRequest, error) {
	var req AbortRequest
	err := providers.ReadJSON(ctx, s.e.Store, AbortRequestKey, providers.ReadOptions{}, maxAbortRequestBytes, &req)
	if errors.Is(err, providers.ErrNotFound) {
		return nil, nil
	}
	if errors.Is(err, providers.ErrNotJSON) || errors.Is(err, providers.ErrObjectTooLarge) {
		// Not a request (no token to judge): a stray object must not stop a run mid-ramp.
		s.e.log().Warn("ignoring an abort request object that is not one: it names no run", "key", AbortRequestKey, "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the abort request: %w", err)
	}
	if req.Token != s.j.Token {
		return nil, nil
	}
	return &req, nil
}

// honourAbort journals an abort request (who asked, why), removes it, and steps back to the
// baseline as `abort` does.
func (e *Executor) honourAbort(s *session, o RunOptions, h failoverState, req *AbortRequest, out *Outcome) (*Outcome, error) {
	ctx := s.ctx
	why := fmt.Sprintf("abort requested by %s at %s by its clock: %q", providers.Sanitize(req.By, 200), req.Time.Format(time.RFC3339), providers.Sanitize(req.Reason, 500))
	if _, err := s.j.Append(ctx, Record{Kind: RecAbortRequest, Reason: req.Reason, Detail: why}); err != nil {
		return out, err
	}
	if err := e.Store.Delete(ctx, AbortRequestKey, providers.DeleteOptions{}); err != nil {
		e.log().Warn("abort request not removed (it names this run's token: no later run honours it)", "err", err)
	}
	e.log().Warn("abort requested", "by", req.By, "reason", req.Reason)
	o.RollbackOnFail = true
	return e.rollback(s, o, h, why, out)
}

// AbortWait is how the run an abort request named ended, as its requester saw it: exactly one
// of Gone, Dead, Silent and TimedOut is set.
type AbortWait struct {
	// Lock is the lock as last read.
	Lock Lock
	// Gone: the run let go of the lock (released it), or a later owner holds it now.
	Gone bool
	// Dead says why the holder is known dead (a process on this host that is gone).
	Dead string
	// Silent is the TTL the lock record stayed unchanged for on this process's monotonic clock:
	// its holder is stopped or cut off from the store, and its own lease has run out, so it
	// writes nothing more.
	Silent time.Duration
	// TimedOut: the holder is alive and has not let go within the wait.
	TimedOut bool
	// Withdrawn: the request was still in the store and is removed (the run it named can no
	// longer honour it). A request that timed out stays: its run may still honour it.
	Withdrawn bool
}

// AwaitAbort watches the lock req names until its run lets go of it, its holder is known dead
// or silent (its record unchanged for its TTL, judged on this process's monotonic clock, never
// on the record's timestamps), or within passes.
func (e *Executor) AwaitAbort(ctx context.Context, req AbortRequest, within time.Duration) (AbortWait, error) {
	l := e.locker()
	deadline := time.Now().Add(within)
	var w AbortWait
	var watched *Lock
	var since time.Time
	for {
		lk, ok, err := l.Read(ctx)
		if err != nil {
			return w, err
		}
		w.Lock = lk
		switch dead, why := e.owners().IsGone(lk.Owner); {
		case !ok || lk.Released || lk.Token != req.Token || lk.ID != req.LockID:
			w.Gone = true
		case dead:
			w.Dead = why
		case watched == nil || !sameRecord(*watched, lk):
			watched, since = &lk, time.Now()
		case time.Since(since) >= l.recordTTL(lk):
			w.Silent = l.recordTTL(lk)
		}
		if w.Gone || w.Dead != "" || w.Silent > 0 {
			w.Withdrawn = e.withdrawAbort(ctx, req)
			return w, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			w.TimedOut = true
			return w, nil
		}
		if err := wait.Sleep(ctx, min(left, 200*time.Millisecond)); err != nil {
			return w, err
		}
	}
}

// withdrawAbort removes req from the store while it is still the request there (a delete
// conditional on the revision read); false when it is gone or another request replaced it.
func (e *Executor) withdrawAbort(ctx context.Context, req AbortRequest) bool {
	obj, err := e.Store.Stat(ctx, AbortRequestKey)
	if err != nil {
		return false
	}
	var cur AbortRequest
	if err := providers.ReadJSON(ctx, e.Store, AbortRequestKey, providers.ReadOptions{IfMatch: obj.Revision}, maxAbortRequestBytes, &cur); err != nil {
		return false
	}
	if cur.Token != req.Token || cur.LockID != req.LockID || cur.By != req.By || !cur.Time.Equal(req.Time) {
		return false
	}
	if err := e.Store.Delete(ctx, AbortRequestKey, providers.DeleteOptions{IfMatch: obj.Revision}); err != nil {
		e.log().Warn("abort request not withdrawn (it names an ended run's token: no later run honours it)", "err", err)
		return false
	}
	return true
}
