package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"lifeboat/failover"
	"lifeboat/providers"
)

// defaultStatusRuns is how many recent runs `failover status` lists without --runs.
const defaultStatusRuns = 10

// statusDoc is `failover status -o json|yaml`: the latest run in detail (failover.Status, its
// members at the top as before) and the recent runs, newest first.
type statusDoc struct {
	*failover.Status
	Runs []failover.RunSummary `json:"runs"`
	// DriftFix, when the router drifted from the journal, is what puts it back.
	DriftFix *driftFix `json:"drift_fix,omitempty"`
}

// renderRuns prints the recent runs as a table, newest first; a run whose journal cannot be
// read is a row that says so, with the reason below the table. Every journal field is a peer's
// text (another process wrote it): each is sanitised.
func renderRuns(w io.Writer, runs []failover.RunSummary) error {
	if len(runs) == 0 {
		return nil
	}
	fmt.Fprintf(w, "Recent runs (newest first, %d shown; --runs N for more):\n", len(runs))
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  RUN\tACTION\tSTARTED\tENDED\tOUTCOME\tBY\tSTEPS\tREASON")
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	var notes []string
	for _, r := range runs {
		action := "-"
		if r.Event != nil {
			action = providers.Sanitize(r.Event.String(), 80)
		}
		steps := "-"
		if r.Steps > 0 || r.Applied > 0 {
			steps = fmt.Sprintf("%d/%d", r.Applied, r.Steps)
		}
		if r.RolledBack > 0 {
			steps += fmt.Sprintf(", %d back", r.RolledBack)
		}
		reason, by := "-", "-"
		if r.Reason != "" {
			reason = fmt.Sprintf("%q", providers.Sanitize(r.Reason, 40))
		}
		if r.Holder != "" {
			by = providers.Sanitize(r.Holder, 80)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", providers.Sanitize(r.Run, 80), action, at(r.Started), at(r.Ended),
			r.Outcome, by, steps, reason)
		switch {
		case r.Error != "":
			notes = append(notes, fmt.Sprintf("  %s: unreadable: %s", providers.Sanitize(r.Run, 80), providers.Sanitize(r.Error, 300)))
		case r.Detail != "" && r.Outcome != failover.OutcomeDone:
			notes = append(notes, fmt.Sprintf("  %s: %s: %s", providers.Sanitize(r.Run, 80), r.Outcome, providers.Sanitize(r.Detail, 300)))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	return nil
}
