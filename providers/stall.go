package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// ErrStalled is the cause of a read that the stall guard ended: the store delivered no byte for
// the stall timeout. The read fails with ErrUnreachable (errors.Is finds both).
var ErrStalled = errors.New("no data received within the stall timeout")

// WithStallGuard returns s with every Read guarded: when a call into the store (opening the read,
// or one Read of its body) blocks for timeout (0 means DefaultStallTimeout), the read is
// cancelled and fails as ErrUnreachable wrapping ErrStalled. Time the caller's fn spends between
// Reads (a slow consumer, a target applying back-pressure) does not count. Open applies it to
// every store with Options.Retry.StallTimeout; a caller may wrap again with a tighter timeout.
//
// It is the one stall watchdog: SDKs that resume a broken body by themselves (GCS's reader
// re-opens after any body error, without limit) would otherwise spin for ever against a server
// that breaks every response before its first byte, and a peer that stops sending mid-body would
// hang the read. Safe for concurrent use, like the Store it wraps.
//
// On a store WithRetry wraps (any store from Open), the guard goes under the retry layer, so
// that a stalled attempt is retried with a fresh watchdog instead of ending all attempts at once.
func WithStallGuard(s Store, timeout time.Duration) Store {
	if timeout <= 0 {
		timeout = DefaultStallTimeout
	}
	if r, ok := s.(*retryStore); ok {
		return &retryStore{Store: &stallStore{Store: r.Store, timeout: timeout}, o: r.o, log: r.log}
	}
	return &stallStore{Store: s, timeout: timeout}
}

type stallStore struct {
	Store
	timeout time.Duration
}

// Unwrap returns the guarded store.
func (s *stallStore) Unwrap() Store { return s.Store }

func (s *stallStore) Read(ctx context.Context, key string, opts ReadOptions, fn func(io.Reader) error) error {
	ctx, g := newStallGuard(ctx, s.timeout)
	defer g.stop()
	err := s.Store.Read(ctx, key, opts, func(r io.Reader) error {
		g.opened()
		err := fn(g.reader(r))
		g.blocked() // back in the store: draining, closing, maybe re-opening
		return err
	})
	if err != nil && g.fired() {
		return &Error{Op: "read", Store: s.String(), Key: key, Kind: ErrUnreachable, Err: fmt.Errorf("%w (%s)", ErrStalled, s.timeout)}
	}
	return err
}

// stallGuard cancels a read's context when a call into the SDK (the open, or one Read) has been
// blocked for the timeout. Time the caller spends between reads (a slow consumer) does not count.
type stallGuard struct {
	busy   atomic.Int64 // unix nanoseconds since which a call has been blocked; 0 when none is
	hit    atomic.Bool
	cancel context.CancelCauseFunc
	done   chan struct{}
}

func newStallGuard(parent context.Context, timeout time.Duration) (context.Context, *stallGuard) {
	if timeout <= 0 {
		timeout = DefaultStallTimeout
	}
	ctx, cancel := context.WithCancelCause(parent)
	g := &stallGuard{cancel: cancel, done: make(chan struct{})}
	g.busy.Store(time.Now().UnixNano()) // the open counts as a blocking call
	go func() {
		t := time.NewTicker(max(timeout/4, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-g.done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				if b := g.busy.Load(); b != 0 && now.Sub(time.Unix(0, b)) >= timeout {
					g.hit.Store(true)
					cancel(ErrStalled)
					return
				}
			}
		}
	}()
	return ctx, g
}

func (g *stallGuard) fired() bool { return g.hit.Load() }

// opened marks the end of the open call.
func (g *stallGuard) opened() { g.busy.Store(0) }

// blocked marks the start of a call into the store.
func (g *stallGuard) blocked() { g.busy.Store(time.Now().UnixNano()) }

func (g *stallGuard) stop() {
	close(g.done)
	g.cancel(nil)
}

// reader times every Read call; one that returns resets the clock.
func (g *stallGuard) reader(r io.Reader) io.Reader { return stallReader{r, g} }

type stallReader struct {
	r io.Reader
	g *stallGuard
}

func (s stallReader) Read(p []byte) (int, error) {
	s.g.busy.Store(time.Now().UnixNano())
	n, err := s.r.Read(p)
	s.g.busy.Store(0)
	return n, err
}
