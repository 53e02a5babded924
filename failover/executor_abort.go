package failover

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"lifeboat/providers"
)

// AbortRequestKey is where a second operator asks the run holding the lock to abort
// (`lifeboat failover abort` while a run goes on, as `kubectl argo rollouts abort`).
const AbortRequestKey = "failover/abort-request.json"

// maxAbortRequestBytes bounds an abort request object.
const maxAbortRequestBytes = 64 << 10

// AbortRequest asks the holder of the lock with Token to abort: between steps it journals who
// asked and why, and steps back to the baseline, ramped and under the same rules.
type AbortRequest struct {
	By     string    `json:"by"`
	Reason string    `json:"reason"`
	Time   time.Time `json:"time"`
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
	why := fmt.Sprintf("abort requested by %s at %s: %q", providers.Sanitize(req.By, 200), req.Time.Format(time.RFC3339), providers.Sanitize(req.Reason, 500))
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
