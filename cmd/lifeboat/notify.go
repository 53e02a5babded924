package main

import (
	"log/slog"

	"lifeboat/drills"
	"lifeboat/failover"
	"lifeboat/fleet"
	"lifeboat/fleet/notify"
)

// notifier starts the delivery of the fleet's notifications (fleet notify:), logging on stderr
// — even with --quiet, a notification that was not delivered is a warning worth seeing. nil when
// the fleet has no webhooks.
func (a *app) notifier(f *fleet.Fleet) *notify.Notifier {
	if len(f.Notify) == 0 {
		return nil
	}
	return notify.New(f.Notify, slog.New(a.logHandler(slog.LevelWarn)))
}

// notifyRuns hooks the fleet's notifications to the executor's journal records; the returned
// func flushes them (within notify.FlushDeadline) and must run before the command exits.
func (a *app) notifyRuns(e *failover.Executor, fleetArg string) (flush func()) {
	n := a.notifier(e.Fleet)
	if n == nil {
		return func() {}
	}
	if fleetArg == "" {
		fleetArg = e.Fleet.File
	}
	rn := &failover.RunNotifier{Fleet: e.Fleet, FleetArg: fleetArg, Send: n.Send}
	prev := e.OnRecord
	e.OnRecord = func(rec failover.Record) {
		if prev != nil {
			prev(rec)
		}
		rn.Record(rec)
	}
	return func() { n.Close(notify.FlushDeadline) }
}

// notifyDrill sends the drill's verdict to its fleet's webhooks and flushes.
func (a *app) notifyDrill(fl *fleet.Fleet, fleetArg string, rep *drills.Report) {
	n := a.notifier(fl)
	if n == nil {
		return
	}
	n.Send(notify.Event{Event: notify.KindDrill, Fleet: fleetArg, Model: fl.Model.Name, Run: rep.Drill,
		Operation: "drill: lose " + rep.Lost, Regions: []string{rep.Lost}, Verdict: rep.Verdict, Detail: rep.Summary,
		Next: "lifeboat drill history --fleet " + fleetArg})
	n.Close(notify.FlushDeadline)
}
