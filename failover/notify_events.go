package failover

import (
	"slices"
	"strconv"

	"lifeboat/fleet"
	"lifeboat/fleet/notify"
)

// RunNotifier turns a run's journal records into notifications (fleet `notify:`): start, hold,
// refused, done and failed, each with the fleet, the run, the operation, the regions and classes
// it touches, and the command to run next. Hook Record to Executor.OnRecord: it only queues
// (notify.Notifier.Send never blocks), so a dead receiver never delays a step.
type RunNotifier struct {
	Fleet *fleet.Fleet
	// FleetArg is the fleet file as the operator gave it, for the next command.
	FleetArg string
	Send     func(notify.Event)

	op     *Event // the run's event, from its start (or refused) record
	reason string // the operator's reason, from the same
}

// Record notifies what the record says, when it is one of the notified kinds.
func (n *RunNotifier) Record(rec Record) {
	if n == nil || n.Send == nil {
		return
	}
	if rec.Event != nil {
		ev := *rec.Event
		n.op = &ev
	}
	if rec.Reason != "" && (rec.Kind == RecStart || rec.Kind == RecRefused) {
		n.reason = rec.Reason
	}
	kind, verdict := "", ""
	switch rec.Kind {
	case RecStart:
		kind, verdict = notify.KindStart, "started"
	case RecHold:
		kind, verdict = notify.KindHold, "held"
	case RecRefused:
		kind, verdict = notify.KindRefused, "refused"
	case RecDone:
		kind, verdict = notify.KindDone, "done"
		if rec.Detail != "" {
			verdict = "done, held short of the target"
		}
	case RecFailed:
		kind, verdict = notify.KindFailed, "failed"
	default:
		return
	}
	ev := notify.Event{Event: kind, Time: rec.Time, Fleet: n.FleetArg, Model: n.Fleet.Model.Name, Run: rec.Run,
		Verdict: verdict, Reason: n.reason, Detail: rec.Detail, Holder: rec.Holder}
	if rec.Step != nil && rec.Detail != "" {
		// Record.Step is the plan's index; people (and the run's own messages) count from 1
		ev.Detail = "step " + strconv.Itoa(*rec.Step+1) + ": " + rec.Detail
	}
	regions := slices.Clone(rec.Out)
	if n.op != nil {
		ev.Operation = n.op.String()
		if n.op.Region != "" && !slices.Contains(regions, n.op.Region) {
			regions = append(regions, n.op.Region)
		}
	}
	slices.Sort(regions)
	ev.Regions = regions
	for _, c := range sortedKeys(n.Fleet.Tenants) {
		for _, r := range regions {
			if slices.Contains(n.Fleet.Tenants[c], r) {
				ev.Classes = append(ev.Classes, c)
				break
			}
		}
	}
	switch rec.Kind {
	case RecStart, RecDone:
		ev.Next = CommandLine(n.FleetArg, "status")
	case RecHold, RecFailed:
		ev.Next = CommandLine(n.FleetArg, "resume") + "   (or: " + CommandLine(n.FleetArg, "abort") + ")"
	case RecRefused:
		ev.Next = CommandLine(n.FleetArg, "plan")
		if n.op != nil {
			ev.Next = CommandLine(n.FleetArg, "plan", n.op.Flags()) // the one spelling: --region R [--action A]
		}
	}
	n.Send(ev)
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
