package failover

import (
	"context"
	"maps"
	"slices"
	"time"

	"lifeboat/fleet/router"
	"lifeboat/providers"
)

// failoverState is what the journal says about the open failover.
type failoverState struct {
	baseline    router.Weights
	transitions map[string]int
	// out are the regions the open failover evacuated and has not restored.
	out []string
	// kept is the newest entry the journal holds of each class's regions (router.Kept): what a
	// driver whose withdraw deletes an entry recreates it from, in a later run.
	kept router.Kept
}

// outAfter is the set of regions out of service once event ev runs, from the open failover's.
func outAfter(out []string, ev Event) []string {
	set := slices.Clone(out)
	switch ev.Kind {
	case Evacuate:
		if !slices.Contains(set, ev.Region) {
			set = append(set, ev.Region)
		}
	case Restore:
		set = slices.DeleteFunc(set, func(r string) bool { return r == ev.Region })
	}
	slices.Sort(set)
	return set
}

// history reads the journal: the open failover's baseline (nil when none is open) and each
// region's changes in the last hour.
func (e *Executor) history(ctx context.Context) (failoverState, error) {
	st := failoverState{transitions: map[string]int{}}
	runs, err := Runs(ctx, e.Store)
	if err != nil {
		return st, err
	}
	hourAgo := e.now().Add(-time.Hour)
	baselineKnown := false
	for i := len(runs) - 1; i >= 0; i-- {
		// A bad object (junk, too large, a gap) ends what is read of its run and is reported,
		// never the end of an abort: the planner goes back to the baseline of the records before
		// it, checked against the live router as always.
		j, err := ScanRun(ctx, e.Store, runs[i])
		if err != nil {
			return st, err
		}
		for _, b := range j.Bad {
			e.log().Warn("journal: bad object skipped", "object", b.Key, "why", b.Err)
		}
		recs := j.Records
		if !ofFleet(recs, e.fleetID()) {
			continue
		}
		for i := len(recs) - 1; i >= 0; i-- { // newest first: an entry already kept is newer
			for _, rs := range []*router.RouterState{recs[i].After, recs[i].Before, recs[i].Target} {
				if rs != nil {
					st.kept = st.kept.Merge(rs.Kept)
				}
			}
		}
		started := false
		for _, r := range recs {
			switch {
			case r.Kind == RecStart && !baselineKnown:
				st.baseline, st.out, started = r.Baseline, r.Out, true
			case r.Kind == RecDone && r.Closed && started:
				st.baseline, st.out = nil, nil
			case r.Kind == RecResult && r.Time.After(hourAgo) && r.Before != nil && r.After != nil:
				for reg := range changedRegions(*r.Before, *r.After) {
					st.transitions[reg]++
				}
			}
		}
		baselineKnown = baselineKnown || started
		if baselineKnown && (len(recs) == 0 || recs[len(recs)-1].Time.Before(hourAgo)) {
			break // runs are ordered by fencing token: older ones ended before this one began
		}
	}
	return st, nil
}

// latestStarted returns this fleet's newest run that began changing the router (refused runs
// are skipped: they changed nothing).
func (e *Executor) latestStarted(ctx context.Context) (string, []Record, error) {
	return latestStartedOf(ctx, e.Store, e.fleetID())
}

// scanLatestStarted is latestStarted for readers that report rather than refuse (status): the
// fleet's newest run with a start among its valid records (else its newest run), and every bad
// object seen on the way.
func scanLatestStarted(ctx context.Context, s providers.Store, fleet string) (RunJournal, []*BadRecordError, error) {
	runs, err := Runs(ctx, s)
	if err != nil {
		return RunJournal{}, nil, err
	}
	var bad []*BadRecordError
	var newest RunJournal
	for i := len(runs) - 1; i >= 0; i-- {
		j, err := ScanRun(ctx, s, runs[i])
		if err != nil {
			return RunJournal{}, bad, err
		}
		bad = append(bad, j.Bad...)
		if fleet != "" && !ofFleet(j.Records, fleet) {
			continue
		}
		if newest.Run == "" {
			newest = j
		}
		for _, r := range j.Records {
			if r.Kind == RecStart {
				return j, bad, nil
			}
		}
	}
	return newest, bad, nil
}

func latestStarted(ctx context.Context, s providers.Store) (string, []Record, error) {
	return latestStartedOf(ctx, s, "")
}

// latestStartedOf is latestStarted among the runs of the fleet with this digest ("": any).
func latestStartedOf(ctx context.Context, s providers.Store, fleet string) (string, []Record, error) {
	runs, err := Runs(ctx, s)
	if err != nil {
		return "", nil, err
	}
	for i := len(runs) - 1; i >= 0; i-- {
		recs, err := ReadRun(ctx, s, runs[i])
		if err != nil {
			return "", nil, err
		}
		if fleet != "" && !ofFleet(recs, fleet) {
			continue
		}
		for _, r := range recs {
			if r.Kind == RecStart {
				return runs[i], recs, nil
			}
		}
	}
	return "", nil, nil
}

func changedRegions(a, b router.RouterState) map[string]bool {
	out := map[string]bool{}
	for c := range b.Weights {
		for _, r := range unionStrings(a.Weights[c], b.Weights[c]) {
			if a.Weights[c][r] != b.Weights[c][r] || a.States.Get(c, r) != b.States.Get(c, r) {
				out[r] = true
			}
		}
	}
	return out
}

func unionStrings(ms ...map[string]int) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}
