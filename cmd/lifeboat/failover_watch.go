package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"lifeboat/failover"
	"lifeboat/fleet"
	"lifeboat/internal/base/wait"
	"lifeboat/providers"
)

// watchStatus is `failover status --watch`: the run's status redrawn every interval until
// interrupted (as `kubectl get -w`, `kubectl argo rollouts get rollout --watch`). On a terminal
// the screen is cleared and redrawn; otherwise each refresh is a new block, with no escapes.
// Interrupting it is how it ends: exit 0.
func (a *app) watchStatus(ctx context.Context, f *fleet.Fleet, e *failover.Executor, interval time.Duration) error {
	tty := isTerminal(a.stdout)
	for {
		var b bytes.Buffer
		now := time.Now().UTC()
		fmt.Fprintf(&b, "Every %s: %s (Ctrl-C to stop)   %s\n", interval, failover.CommandLine(f.File, "status"), now.Format(time.RFC3339))
		st, err := e.Status(ctx)
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case st == nil:
			fmt.Fprintf(&b, "STATUS UNAVAILABLE: %s\n", providers.Sanitize(err.Error(), 500))
		default:
			_ = renderStatus(&b, f, st)
			renderNextStep(&b, f, st, now)
		}
		if tty {
			fmt.Fprint(a.rawStdout, "\x1b[H\x1b[2J") // the escape itself: stdout's writer makes escapes safe
		} else {
			fmt.Fprintln(a.stdout)
		}
		_, _ = a.stdout.Write(b.Bytes())
		if wait.Sleep(ctx, interval) != nil {
			return nil
		}
	}
}

// renderNextStep says, for a run in flight, the step it is at and when the next one is due:
// step_interval after the journal's last record (then a drain, when the step withdraws a
// region, of up to drain_timeout).
func renderNextStep(w io.Writer, f *fleet.Fleet, st *failover.Status, now time.Time) {
	if st.Plan == nil || st.Done || st.Last == nil || st.NextStep >= len(st.Plan.Steps) {
		return
	}
	n := len(st.Plan.Steps)
	if st.State != "running" {
		fmt.Fprintf(w, "  next: step %d/%d, when the run is resumed\n", st.NextStep+1, n)
		return
	}
	due := st.Last.Time.Add(f.Failover.StepInterval).UTC()
	when := "due " + due.Format(waitClockCLI)
	if left := due.Sub(now); left > 0 {
		when += fmt.Sprintf(" (in %s)", left.Round(time.Second))
	}
	line := fmt.Sprintf("  next: step %d/%d %s", st.NextStep+1, n, when)
	if s := st.Plan.Steps[st.NextStep]; s.WaitForDrain && len(s.Withdraw) > 0 {
		line += fmt.Sprintf(", after draining %s for up to drain_timeout %s", strings.Join(s.Withdraw, ", "), f.Failover.DrainTimeout)
	}
	fmt.Fprintln(w, line)
}

// waitClockCLI is how a due time is shown: the UTC clock, as the run's wait lines say it.
const waitClockCLI = "15:04:05Z"
