package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"lifeboat/failover"
	"lifeboat/fleet"
	"lifeboat/fleet/router"
)

// fleetLine names the fleet a command acts on, so that prod and staging cannot be confused: the
// file as given, the model, the router and the state store.
func fleetLine(f *fleet.Fleet) string {
	return fmt.Sprintf("fleet %s (model %s, router %s, state %s)", f.File, f.Model.Name, f.Router.Driver, f.State)
}

// planEstimate is how long a plan takes: a step_interval between steps, plus at most
// drain_timeout for every step that waits for a drain. plan -o json carries it (planDoc).
type planEstimate struct {
	Steps         int     `json:"steps"`
	StepWaits     int     `json:"step_waits"`
	StepIntervalS float64 `json:"step_interval_s"`
	Drains        int     `json:"drains"`
	DrainTimeoutS float64 `json:"drain_timeout_s"`
	d             time.Duration
}

func estimatePlan(f *fleet.Fleet, p *failover.Plan) planEstimate {
	pol := f.Failover
	e := planEstimate{Steps: len(p.Steps), StepIntervalS: pol.StepInterval.Seconds(), DrainTimeoutS: pol.DrainTimeout.Seconds()}
	if e.Steps == 0 {
		return e
	}
	e.StepWaits = e.Steps - 1
	for _, st := range p.Steps {
		if st.WaitForDrain {
			e.Drains++
		}
	}
	e.d = time.Duration(e.StepWaits)*pol.StepInterval + time.Duration(e.Drains)*pol.DrainTimeout
	return e
}

// text is the estimate and how it was reached, for the plan's header line.
func (e planEstimate) text(f *fleet.Fleet) (time.Duration, string) {
	if e.Steps == 0 {
		return 0, "nothing to apply"
	}
	how := fmt.Sprintf("%d step(s), %d wait(s) of step_interval %s", e.Steps, e.StepWaits, f.Failover.StepInterval)
	if e.Drains > 0 {
		how += fmt.Sprintf(", + up to drain_timeout %s for %d drain(s)", f.Failover.DrainTimeout, e.Drains)
	}
	return e.d, how
}

// planDoc is plan -o json: the plan, and its estimated duration in seconds with the parts it
// is made of (the same figures as the text header).
type planDoc struct {
	*failover.Plan
	EstimatedS float64      `json:"estimated_s"`
	Estimate   planEstimate `json:"estimate"`
	// StopConditions are the fleet's stop conditions as they read now.
	StopConditions []failover.StopResult `json:"stop_conditions,omitempty"`
	// Warning is what the verdict line carries beside the verdict (a ramped evacuation of a
	// region that is DOWN: Plan.DownWarning).
	Warning string `json:"warning,omitempty"`
}

func newPlanDoc(f *fleet.Fleet, p *failover.Plan, stops []failover.StopResult) planDoc {
	e := estimatePlan(f, p)
	return planDoc{Plan: p, EstimatedS: e.d.Seconds(), Estimate: e, StopConditions: stops, Warning: p.DownWarning()}
}

// renderStops prints each stop condition as it reads now: whether it would let a write
// through, its value or why it has none, and the query as sent.
func renderStops(w io.Writer, stops []failover.StopResult) {
	if len(stops) == 0 {
		return
	}
	fmt.Fprintln(w, "Stop conditions (evaluated again before every write; as they read now):")
	for _, r := range stops {
		mark := "PASS"
		switch {
		case r.Overridden:
			mark = "OVERRIDDEN"
		case r.Attempts == 0:
			mark = "NOT EVALUATED"
		case r.Pass:
		case r.DryRun:
			mark = "FAIL (dry_run: never holds)"
		default:
			mark = "FAIL (would hold)"
		}
		fmt.Fprintf(w, "  %s %s\n", mark, strings.TrimPrefix(r.String(), "stop condition "))
	}
}

// renderPlan prints what a person decides on: the fleet, each region's signals, the estimated
// duration, the steps (a cell a step changes is marked ~), and a verdict that cannot be missed.
func renderPlan(w io.Writer, f *fleet.Fleet, fleetArg string, p *failover.Plan, stops []failover.StopResult) error {
	fmt.Fprintf(w, "Plan for %s\n", fleetLine(f))
	d, how := estimatePlan(f, p).text(f)
	fmt.Fprintf(w, "%s — %d step(s); estimated %s (%s); step_percent %d, spill_start_ms %d\n",
		p.Event, len(p.Steps), d, how, f.Failover.StepPercent, f.Failover.SpillStartMS)
	if len(p.Regions) > 0 {
		fmt.Fprintln(w, "Regions (what this plan was decided on):")
		tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "  REGION\tHEALTH\tWARM\tQUEUE WAIT\tINFLOW\tRECEIVES")
		for _, r := range p.Regions {
			health, warm, q := "healthy", "warm", "unknown"
			if !r.Healthy {
				health = "DOWN"
			}
			if !r.Warm {
				warm = "COLD"
			}
			if r.QueueWaitMS != nil {
				q = fmt.Sprintf("%.0f ms", *r.QueueWaitMS)
			}
			inflow := r.Inflow
			if r.Inflow != "none" {
				inflow = fmt.Sprintf("%s %.0f tok/s", r.Inflow, r.InflowTokensPerS)
			}
			recv := "yes"
			switch {
			case r.Region == p.Event.Region && p.Event.Kind == failover.Evacuate:
				recv = "no: evacuating"
			case !r.Receiver:
				recv = "no: " + r.Why
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", r.Region, health, warm, q, inflow, recv)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if p.Event.Kind == failover.Evacuate && !p.Immediate {
		for _, r := range p.Regions {
			if r.Region == p.Event.Region && !r.Healthy {
				fmt.Fprintf(w, "%s is DOWN: a ramp waits on a region that cannot answer. If it is dead, move everything at once:\n  %s\n",
					r.Region, failover.CommandLine(fleetArg, "run", "--region", r.Region, "--immediate", "--reason", "'region down'"))
			}
		}
	}
	if len(p.Classes) > 0 && !p.Refused {
		var others []string
		for _, c := range sortedClassNames(f) {
			if !p.Covers(c) {
				others = append(others, c)
			}
		}
		fmt.Fprintf(w, "Classes: this plan moves %s", strings.Join(p.Classes, ", "))
		if len(others) > 0 {
			verb := "stays"
			if len(others) > 1 {
				verb = "stay"
			}
			fmt.Fprintf(w, "; %s %s exactly as on the router", strings.Join(others, ", "), verb)
		}
		fmt.Fprintln(w)
	}
	if !p.Refused && len(p.Steps) > 0 {
		if err := renderSteps(w, f, p); err != nil {
			return err
		}
	}
	for _, b := range p.Blocked {
		fmt.Fprintf(w, "BLOCKED %s (%s), left untouched: %s\n", b.Class, b.Rule, b.Reason)
	}
	if len(p.CouldMove) > 0 {
		args := []string{p.Event.Flags(), "--skip-blocked"}
		if len(p.Selected) > 0 {
			args = append(args, "--class", strings.Join(p.Selected, ","))
		}
		fmt.Fprintf(w, "%s can move without the blocked classes; to move them and leave the others untouched:\n  %s\n",
			strings.Join(p.CouldMove, ", "), failover.CommandLine(fleetArg, "plan", args...))
	}
	if len(p.Shed) > 0 {
		var parts []string
		for _, c := range sortedFloatKeys(p.Shed) {
			parts = append(parts, fmt.Sprintf("%s %.1f%%", c, p.Shed[c]))
		}
		fmt.Fprintf(w, "Cannot be placed (stays on %s; shed if it is down): %s\n", p.Event.Region, strings.Join(parts, ", "))
	}
	if !p.Refused && p.Reason != "" && p.Reason != p.Hold && !p.OnlyBlocked() {
		fmt.Fprintln(w, p.Reason)
	}
	for _, s := range p.Assumptions {
		fmt.Fprintf(w, "assumed: %s\n", s)
	}
	renderStops(w, stops)
	for _, r := range p.Overrides {
		fmt.Fprintf(w, "OVERRIDE: rule %s is bypassed\n", r)
	}
	for _, s := range p.DecidedByAssumption {
		fmt.Fprintf(w, "  decided by an assumption: %s\n", s)
	}
	switch {
	case p.Refused:
		fmt.Fprintln(w, banner("REFUSED: this plan changes nothing"))
	case p.OnlyBlocked():
		fmt.Fprintln(w, banner("PARTIAL: blocked classes are left untouched; this is not a success"))
	case !p.Complete:
		fmt.Fprintln(w, banner("HELD FOR SAFETY: this plan does not reach its target"))
	}
	verdict := withFleet(p.Verdict(), fleetArg)
	if warn := p.DownWarning(); warn != "" {
		verdict += " — " + warn
	}
	fmt.Fprintf(w, "VERDICT: %s\n", verdict)
	return nil
}

// banner is a line that cannot be missed above a verdict that holds or refuses.
func banner(s string) string {
	bar := strings.Repeat("!", 8)
	return bar + " " + s + " " + bar
}

// renderSteps prints steps × class × region; a cell a step changes is marked ~ (weight or state).
func renderSteps(w io.Writer, f *fleet.Fleet, p *failover.Plan) error {
	fmt.Fprintln(w, "Steps (~ marks a cell the step changes):")
	regions := f.RegionNames()
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "STEP\tCLASS\t%s\tDRAIN\tWITHDRAW\tPREDICTED QUEUE WAIT\n", strings.Join(regions, "\t"))
	state := p.Start.Clone()
	if state.States == nil {
		state.States = router.States{}
	}
	cell := func(rs router.RouterState, class, r string) string {
		c := fmt.Sprint(rs.Weights[class][r])
		if s := rs.States.Get(class, r); s != router.Ready {
			c += " " + string(s)
		}
		return c
	}
	row := func(label string, prev *router.RouterState, st *failover.Step) {
		for i, class := range sortedClassNames(f) {
			cells := make([]string, len(regions))
			for j, r := range regions {
				switch {
				case !slices.Contains(f.Tenants[class], r):
					cells[j] = "·"
				default:
					cells[j] = cell(state, class, r)
					if prev != nil && cells[j] != cell(*prev, class, r) {
						cells[j] = "~" + cells[j]
					}
				}
			}
			l, drain, withdraw, qw := "", "", "", ""
			if i == 0 {
				l = label
				if st != nil {
					drain, withdraw = strings.Join(st.Drain, ","), strings.Join(st.Withdraw, ",")
					if st.WaitForDrain {
						withdraw += " (after drain)"
					}
					var parts []string
					for _, r := range sortedFloatKeys(st.PredictedQueueWaitMS) {
						parts = append(parts, fmt.Sprintf("%s %.0f ms", r, st.PredictedQueueWaitMS[r]))
					}
					qw = strings.Join(parts, ", ")
				}
			}
			name := class
			if !p.Covers(class) {
				name += " (untouched)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l, name, strings.Join(cells, "\t"), drain, withdraw, qw)
		}
	}
	row("now", nil, nil)
	for k, st := range p.Steps {
		prev := state.Clone()
		state.Weights.Apply(st.Weights)
		state.States.Apply(st.States)
		row(fmt.Sprint(k+1), &prev, st)
	}
	return tw.Flush()
}
