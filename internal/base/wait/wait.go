package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends, whichever comes first. It returns ctx.Err() when ctx ended
// (also for d <= 0, which does not wait), else nil.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
