// Recovery time from the journal: when every class was on warm receivers, what blocked it if
// never, and the weights over time for the report.

package drills

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"lifeboat/failover"
	"lifeboat/fleet/router"
)

// recovery computes recovery time from the journal: from the run's start record (the failover
// decision) to the first result after which no class has weight on the lost region and every
// weighted region is a warm receiver.
func (x *run) recovery(recs []failover.Record) {
	sla := &x.rep.SLA
	var start *time.Time
	var last *failover.Record
	for i, rec := range recs {
		if rec.Kind == failover.RecStart && start == nil {
			t := rec.Time
			start = &t
		}
		if start == nil || rec.After == nil || (rec.Kind != failover.RecResult && rec.Kind != failover.RecReassert) {
			continue
		}
		last = &recs[i]
		if x.onWarmReceivers(*rec.After) {
			t := rec.Time
			sla.Decision, sla.Recovered = start, &t
			sla.RecoverySeconds = secondsPtr(t.Sub(*start))
			sla.Blocked = ""
			return
		}
	}
	sla.Decision = start
	switch {
	case start == nil:
		sla.Blocked = "the journal has no decision: the evacuation never started"
	case last == nil:
		sla.Blocked = "the journal has no result after the decision: no weight was ever moved"
	default:
		sla.Blocked = fmt.Sprintf("at the last journal result (+%.2fs): %s", last.Time.Sub(x.start).Seconds(), strings.Join(x.blockers(*last.After), "; "))
	}
}

// blockers name each class, region and weight that keeps rs from having every class on warm
// receivers (at most three, then how many more).
func (x *run) blockers(rs router.RouterState) []string {
	var out []string
	for _, c := range slices.Sorted(mapsKeys(x.Fleet.Tenants)) {
		total := 0
		for _, region := range slices.Sorted(mapsKeys(rs.Weights[c])) {
			w := rs.Weights[c][region]
			if w == 0 {
				continue
			}
			total += w
			switch {
			case region == x.Drill.Lose:
				out = append(out, fmt.Sprintf("class %s still had weight %d on %s, the lost region", c, w, region))
			case !x.receives(region):
				out = append(out, fmt.Sprintf("class %s had weight %d on %s, which is not a warm receiver (%s)", c, w, region, x.whyNotReceiver(region)))
			}
		}
		if total == 0 && x.baseline.Total(c) > 0 {
			out = append(out, fmt.Sprintf("class %s had weight 0 on every region (its baseline is %d)", c, x.baseline.Total(c)))
		}
	}
	if len(out) > 3 {
		out = append(out[:3], fmt.Sprintf("and %d more", len(out)-3))
	}
	if len(out) == 0 {
		out = []string{"every class on warm receivers, yet not recognised (a bug: please report it)"}
	}
	return out
}

// whyNotReceiver says why a region cannot take traffic in the drill.
func (x *run) whyNotReceiver(region string) string {
	r := x.Fleet.Regions[region]
	switch {
	case r == nil:
		return "not in the fleet"
	case r.Candidate():
		if b := x.boots[region]; b != nil {
			return fmt.Sprintf("its candidate was judged %s", b.Verdict)
		}
		return "no candidate was booted for it"
	}
	return "no endpoint"
}

func (x *run) onWarmReceivers(rs router.RouterState) bool {
	for c := range x.Fleet.Tenants {
		total := 0
		for region, w := range rs.Weights[c] {
			if w == 0 {
				continue
			}
			total += w
			if region == x.Drill.Lose || !x.receives(region) {
				return false
			}
		}
		if total == 0 && x.baseline.Total(c) > 0 {
			return false
		}
	}
	return true
}

// receives: a warm candidate the drill booted, or a region the drill did not boot (serving at
// its own endpoint, judged by the failover's preflight).
func (x *run) receives(region string) bool {
	r := x.Fleet.Regions[region]
	if r.Candidate() {
		return x.insts[region] != nil
	}
	return r.Endpoint != ""
}

func (x *run) journalWeights(recs []failover.Record) {
	for _, rec := range recs {
		if rec.After != nil && (rec.Kind == failover.RecResult || rec.Kind == failover.RecReassert) {
			x.weightPoint(rec.Time, *rec.After)
		}
	}
}

func (x *run) weightPoint(t time.Time, rs router.RouterState) {
	off := t.Sub(x.start).Seconds()
	for _, c := range slices.Sorted(mapsKeys(rs.Weights)) {
		for _, region := range slices.Sorted(mapsKeys(rs.Weights[c])) {
			x.rep.Weights = append(x.rep.Weights, WeightPoint{Offset: off, Class: c, Region: region, Weight: rs.Weights[c][region], State: string(rs.States.Get(c, region))})
		}
	}
}
