package providers

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"lifeboat/internal/base/wait"
)

// Retries, one layer per kind of failure, so that no failure is retried by two layers whose
// attempts would multiply:
//
//   - a request that got no usable answer (refused, reset before the response, 5xx, 429) is
//     retried by the SDK's retryer, per request: S3 and Azure requests, GCS calls, and each part
//     of a multipart upload, whose bytes only the SDK still holds. Options.Retry configures it.
//   - a read whose body broke after the answer began, or that the stall guard ended, is retried
//     by WithRetry, around the whole Store.Read: the SDK cannot, since the body was already
//     handed to the caller (GCS and Azure readers resume some breaks themselves; S3's does not).
//   - bytes that arrived cleanly but differ from the manifest (a proxy that shortened a body) can
//     only be seen by the caller that knows the manifest: verify and replicate retry those.
//
// WithRetry passes List, Stat, Write and Delete through: their requests are the SDK's to retry,
// a List that delivered entries cannot be repeated without delivering them twice, and a Write's
// content reader cannot be read again.

// DefaultReadAttempts is the attempts WithRetry makes at a Read when RetryOptions.MaxAttempts is 0.
const DefaultReadAttempts = 3

// WithRetry returns s with every Read whose body broke mid-stream (a reset, a truncated body)
// or was ended by the stall guard tried again, from the start of the range, up to
// o.MaxAttempts times in all (0: DefaultReadAttempts), with exponential backoff and jitter
// (o.InitialBackoff, default 200 ms, doubling up to o.MaxBackoff, default 5 s), until ctx ends.
// fn is called again for each attempt, as the Store contract allows: it must start over (reset
// its hashers). An error of fn's own (its reader did not fail) is never retried, nor one that
// providers.Retryable calls final. Each retry is logged at info level as it is scheduled:
// "retry 2/3 in 1.2s: <cause>", the cause sanitised and without a credential.
//
// Open applies it to every store, around the stall guard.
func WithRetry(s Store, o RetryOptions, log *slog.Logger) Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &retryStore{Store: s, o: o, log: log}
}

type retryStore struct {
	Store
	o   RetryOptions
	log *slog.Logger
}

// Unwrap returns the store retried.
func (s *retryStore) Unwrap() Store { return s.Store }

func (s *retryStore) Read(ctx context.Context, key string, opts ReadOptions, fn func(io.Reader) error) error {
	attempts := s.o.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultReadAttempts
	}
	for attempt := 1; ; attempt++ {
		var body *watchedBody
		err := s.Store.Read(ctx, key, opts, func(r io.Reader) error {
			body = &watchedBody{r: r}
			return fn(body)
		})
		if err == nil || attempt >= attempts || !s.again(ctx, err, body) {
			return err
		}
		d := s.backoff(attempt)
		cause := err
		if body != nil && body.err != nil {
			cause = body.err
		}
		s.log.LogAttrs(ctx, slog.LevelInfo, "retry "+strconv.Itoa(attempt+1)+"/"+strconv.Itoa(attempts)+" in "+
			d.Round(time.Millisecond).String()+": "+Sanitize("read "+key+": "+Describe(cause), 200))
		if wait.Sleep(ctx, d) != nil {
			return err
		}
	}
}

// again decides whether a failed Read is WithRetry's to try again: the stall guard ended it (no
// SDK retried that), or the body fn was reading failed in a way another attempt may cure — a
// reset, a truncation, bytes the SDK's own response checksum rejected.
func (s *retryStore) again(ctx context.Context, err error, body *watchedBody) bool {
	if ctx.Err() != nil {
		return false
	}
	if errors.Is(err, ErrStalled) {
		return true
	}
	return body != nil && body.err != nil && Retryable(ctx, body.err)
}

// backoff is the wait before attempt+1: InitialBackoff doubled per attempt, capped at
// MaxBackoff, with jitter in its upper half so that parallel readers do not retry in lockstep.
func (s *retryStore) backoff(attempt int) time.Duration {
	base, ceil := s.o.InitialBackoff, s.o.MaxBackoff
	if base <= 0 {
		base = 200 * time.Millisecond
	}
	if ceil <= 0 {
		ceil = 5 * time.Second
	}
	d := base
	for i := 1; i < attempt && d < ceil; i++ {
		d *= 2
	}
	d = min(d, ceil)
	return d/2 + rand.N(d/2+1)
}

// watchedBody remembers the first error of the body a Read handed to fn, other than io.EOF: it is
// what tells a broken body from a consumer that failed on its own.
type watchedBody struct {
	r   io.Reader
	err error
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}
