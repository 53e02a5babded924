package providers

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"
)

var errStalled = errors.New("no data received within the stall timeout")

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
					cancel(errStalled)
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
