package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"lifeboat/failover"
	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/editdistance"
	"lifeboat/internal/base/shell"
	"lifeboat/manifest"
	"lifeboat/manifest/signature"
	"lifeboat/providers"
)

// failoverCmd is `lifeboat failover plan|run|status|resume|abort|restore|unlock`.
func (a *app) failoverCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "failover",
		Short: "Move tenant classes' traffic between regions: planned, ramped, residency-safe, single-owner, resumable",
		Example: `  lifeboat failover plan --fleet fleet.yaml --region eu-west-1
  lifeboat failover run --fleet fleet.yaml --region eu-west-1 --reason "INC-1234"
  lifeboat failover status --fleet fleet.yaml`,
		Long: `Failover changes the global router's per-region weights in safe steps. Every step of every
plan — run, abort, resume, restore, rollback — is checked against named safety rules:

  residency              a class's weight only goes to its eligible regions (tenants: in the
                         fleet file); a class with traffic and no warm eligible receiver is
                         refused, never widened (not overridable)
  nonzero                never an all-zero weight vector for a class with traffic (not overridable)
  totals                 each class keeps its total; weights in the driver's range (not overridable)
  step_percent           at most step_percent of a class's traffic moves per step
  headroom               a receiver gains only while its predicted queue wait stays under
                         spill_start_ms
  spill_cap              a class's traffic outside its baseline regions stays within
                         spill_cap_percent
  warm                   a region that is not warm (the warm prober) and healthy never gains
  drain_before_withdraw  a region is drained (no new sessions) before it is cut off (maint)
  max_transitions        at most max_transitions_per_hour changes per region
  failback_dwell         a restore waits until the region is warm and calm for failback_dwell

--override RULE bypasses one overridable rule, and is journaled.

Stop conditions (stop_conditions: in the fleet file, docs/failover.md) are PromQL queries to the
fleet's Prometheus, evaluated before every router write of run, resume, abort and restore: one
that fails — its value past max: or min:, an empty result, NaN, a Prometheus that does not
answer or answers an error — holds the run before that write (exit 1), naming the condition,
the query as sent, the value and the threshold. A condition's name is a rule name: --override
NAME bypasses it (journaled), on resume too.

Exit codes: 0 done, the target reached; 1 held (a check failed between steps, or the router
drifted from what the run last read back), drift (status), nothing to resume; 2 bad input;
3 refused or held for safety (residency, no capacity, lock held, expired, a journal this fleet
could not have written, or an outcome short of its target: traffic that cannot be placed, a
failback that stops before the baseline); 4 the router or the state store stayed unreachable.`,
	}
	unknownSubcommand(c)
	c.AddCommand(a.failoverPlanCmd(), a.failoverRunCmd(), a.failoverStatusCmd(), a.failoverResumeCmd(),
		a.failoverAbortCmd(), a.failoverRestoreCmd(), a.failoverUnlockCmd(), a.failoverShowCmd())
	return c
}

// failoverFlags are the flags the failover commands share.
type failoverFlags struct {
	fleet, signals, reason string
	// trusted is failover run's trust check of the fleet's manifest, made before anything else
	// (the executor does not repeat it)
	trusted *signature.Enforced
	// region and action are the one spelling (--region R [--action evacuate|restore|spill]);
	// evacuate and restore are the hidden, deprecated --evacuate R and --restore R.
	region, action        string
	evacuate, restore     string
	spill, immediate, yes bool
	overrides             []string
	rollback              bool
	holdTimeout           time.Duration
	allowPartial          bool
	// out: plan --out FILE (a saved plan); planFile: run --plan FILE (apply it).
	out, planFile string
	// dwellTimeout: --hold-timeout not given to restore: observe for failback_dwell.
	dwellTimeout bool
	// classes: --class (repeatable, comma lists); skipBlocked: --skip-blocked.
	classes     []string
	skipBlocked bool
}

// selection registers --class and --skip-blocked.
func (f *failoverFlags) selection(c *cobra.Command) {
	c.Flags().StringSliceVar(&f.classes, "class", nil, "only these tenant classes (repeatable, or a comma list); every other class is left exactly as it is on the router")
	c.Flags().BoolVar(&f.skipBlocked, "skip-blocked", false, "move every class that can move and leave the blocked ones untouched, each named with its rule and reason; the outcome is short of its target (exit 3), never a success")
}

// checkClasses checks --class against the fleet's tenant classes ("did you mean", exit 2).
func (f *failoverFlags) checkClasses(fl *fleet.Fleet) error {
	for _, c := range f.classes {
		if err := fl.UnknownClass(c); err != nil {
			return usageErr("--class: %v", err)
		}
	}
	return nil
}

func (f *failoverFlags) common(c *cobra.Command) {
	c.Flags().StringVar(&f.fleet, "fleet", "", "fleet file (required)")
	c.Flags().StringVar(&f.signals, "signals", "", "recorded signals (JSON) instead of probing the regions (what-if, drills)")
}

func (f *failoverFlags) safety(c *cobra.Command) {
	c.Flags().BoolVar(&f.immediate, "immediate", false, "move everything in one step and cut off at once: only for a region that is already dead")
	c.Flags().StringArrayVar(&f.overrides, "override", nil, "break-glass: bypass this one rule (journaled; repeatable)")
}

func (f *failoverFlags) acting(c *cobra.Command) {
	c.Flags().StringVar(&f.reason, "reason", "", "why (journaled, shown to anyone who finds the lock held; without it the journal says none was given)")
	c.Flags().BoolVar(&f.yes, "yes", false, "do not ask for confirmation")
	c.Flags().BoolVar(&f.rollback, "rollback-on-fail", false, "when a check fails between steps, step back to the baseline (ramped) instead of holding")
	c.Flags().DurationVar(&f.holdTimeout, "hold-timeout", 0, "re-check a failed step every step_interval for this long before holding")
	c.Flags().BoolVar(&f.allowPartial, "allow-partial", false, "apply a plan that cannot reach its target (traffic it cannot place, a failback that stops short); the outcome still exits 3")
}

func (a *app) loadFleet(name string) (*fleet.Fleet, error) {
	if name == "" {
		return nil, usageErr("--fleet FILE is required")
	}
	f, err := fleet.Read(name)
	if err != nil {
		return nil, usageErr("--fleet: %v", err)
	}
	return f, nil
}

func (a *app) loadSignals(name string, f *fleet.Fleet) (*failover.SignalsFile, error) {
	s, err := failover.ReadSignals(name, f)
	if err != nil {
		return nil, usageErr("--signals: %v", err)
	}
	return s, nil
}

// target registers the one spelling of what a plan or run is for: --region R with --action
// (evacuate, the default, restore or spill), and the old spellings as hidden deprecated aliases
// that name the new one.
func (f *failoverFlags) target(c *cobra.Command, actions string) {
	c.Flags().StringVar(&f.region, "region", "", "the region the action is for")
	c.Flags().StringVar(&f.action, "action", "", "what to do: "+actions+" (default evacuate with --region)")
	// Hidden, and said deprecated by event (on stderr: stdout may be JSON).
	c.Flags().StringVar(&f.evacuate, "evacuate", "", "deprecated: --region REGION")
	c.Flags().BoolVar(&f.spill, "spill", false, "deprecated: --action spill")
	_ = c.Flags().MarkHidden("evacuate")
	_ = c.Flags().MarkHidden("spill")
	if strings.Contains(actions, "restore") {
		c.Flags().StringVar(&f.restore, "restore", "", "deprecated: --region REGION --action restore")
		_ = c.Flags().MarkHidden("restore")
	}
}

// event is what --region and --action (or their old spellings) ask for.
func (f *failoverFlags) event(warn io.Writer) (failover.Event, error) {
	region, action := f.region, f.action
	alias := func(r, a, old string) error {
		if r == "" {
			return nil
		}
		now := "--region " + shell.Quote(r)
		if a != string(failover.Evacuate) {
			now += " --action " + a
		}
		fmt.Fprintf(warn, "lifeboat: %s is deprecated: use %s\n", old, now)
		if region != "" && region != r || action != "" && action != a {
			return usageErr("%s %s contradicts --region %s --action %s: give --region REGION --action ACTION only", old, r, region, action)
		}
		region, action = r, a
		return nil
	}
	if err := alias(f.evacuate, string(failover.Evacuate), "--evacuate"); err != nil {
		return failover.Event{}, err
	}
	if err := alias(f.restore, string(failover.Restore), "--restore"); err != nil {
		return failover.Event{}, err
	}
	if f.spill {
		fmt.Fprintln(warn, "lifeboat: --spill is deprecated: use --action spill")
		if action != "" && action != string(failover.Spill) {
			return failover.Event{}, usageErr("--spill contradicts --action %s", action)
		}
		action = string(failover.Spill)
	}
	if action == "" && region != "" {
		action = string(failover.Evacuate)
	}
	switch failover.EventKind(action) {
	case failover.Evacuate, failover.Restore:
		if region == "" {
			return failover.Event{}, usageErr("--action %s needs --region REGION", action)
		}
		return failover.Event{Kind: failover.EventKind(action), Region: region}, nil
	case failover.Spill:
		if region != "" {
			return failover.Event{}, usageErr("--action spill takes no --region: it moves load off every region over spill_start_ms")
		}
		return failover.Event{Kind: failover.Spill}, nil
	case "":
		return failover.Event{}, usageErr("give --region REGION (to evacuate it; --action restore to give it back) or --action spill")
	}
	msg := fmt.Sprintf("--action %q: want evacuate, restore or spill", action)
	if best := editdistance.Best(action, []string{string(failover.Evacuate), string(failover.Restore), string(failover.Spill)}); best != "" {
		msg += " (" + editdistance.DidYouMean(best) + ")"
	}
	return failover.Event{}, usageErr("%s", msg)
}

// rules are the --override arguments: the overridable rules and the fleet's stop conditions
// (stopOnly: resume, which overrides stop conditions only).
func (f *failoverFlags) rules(fl *fleet.Fleet, stopOnly bool) ([]failover.Rule, error) {
	var out []failover.Rule
	for _, s := range f.overrides {
		r, err := failover.ParseOverride(fl, s, stopOnly)
		if err != nil {
			return nil, usageErr("--override: %v", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// progressLog is the failover's progress on stderr (info level, in the --log-format), unless --quiet.
func (a *app) progressLog() *slog.Logger {
	if a.quiet {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(a.logHandler(slog.LevelInfo))
}

// executor opens the fleet's router and state store.
func (a *app) executor(ctx context.Context, f *fleet.Fleet, ff *failoverFlags) (*failover.Executor, func(), error) {
	if f.State == "" {
		return nil, nil, usageErr("%s: state: required for failover (the store of the lock and the journal)", f.File)
	}
	rtr, err := fleet.OpenRouter(f)
	if err != nil {
		return nil, nil, usageErr("%v", err)
	}
	store, err := a.openStateStore(ctx, f.State)
	if err != nil {
		return nil, nil, err
	}
	var src failover.SignalSource = &failover.LiveSignals{Fleet: f}
	if ff.signals != "" {
		s, err := a.loadSignals(ff.signals, f)
		if err != nil {
			store.Close()
			return nil, nil, err
		}
		src = &failover.StaticSignals{Regions: s.Regions, From: ff.signals}
	}
	e := &failover.Executor{Fleet: f, Store: store, Router: rtr, Signals: src, Log: a.progressLog(),
		OpenSigned: a.signedOpener(manifest.MaxManifestBytes), Warn: func(w string) { fmt.Fprintln(a.stderr, w) }, Trusted: ff.trusted}
	flush := a.notifyRuns(e, ff.fleet) // fleet notify: start, hold, refused, done, failed
	return e, func() { flush(); store.Close() }, nil
}

// pasteable makes every failover command err names pasteable for this fleet (--fleet added);
// its exit code stays the exit table's (the wrapper unwraps).
func pasteable(err error, flt string) error {
	if err == nil || flt == "" {
		return err
	}
	return &pasteableErr{err: err, fleet: flt}
}

// pasteableErr is a failover error whose hints name the fleet: the failover package says
// "lifeboat failover resume"; the operator pastes "lifeboat failover resume --fleet F". With
// next, the message ends with the command to try next, alone on the last line.
type pasteableErr struct {
	err   error
	fleet string
	next  []nextStep
}

func (e *pasteableErr) Error() string {
	msg := withFleet(e.err.Error(), e.fleet)
	for i, n := range e.next {
		lead := "Next, "
		if i > 0 {
			lead = "Or, "
		}
		msg += "\n" + lead + n.why + ":\n  " + n.cmd
	}
	return msg
}

// nextStep is the command a refusal or hold ends with, and what it is for.
type nextStep struct{ why, cmd string }

// nextFailoverStep is the pasteable command to try after err, a failover subcommand's
// (sub: run, restore, abort, resume) refusal or hold; the zero nextStep when err names its
// own next command (a lock's holder, a hold timeout) or there is none to give.
func nextFailoverStep(ff *failoverFlags, sub string, ev failover.Event, out *failover.Outcome, err error) []nextStep {
	var sig []string
	if ff.signals != "" {
		sig = []string{"--signals", shell.Quote(ff.signals)}
	}
	if out != nil && len(out.Instead) > 0 && (errors.Is(err, failover.ErrHeld) || errors.Is(err, failover.ErrIncomplete) || errors.Is(err, failover.ErrRefused)) {
		// The way back to the baseline is blocked (a region that cannot take its traffic
		// back): both ways out, the one that goes on back and the one that finishes the
		// evacuation it was undoing.
		back := nextStep{"once what holds it is fixed, to go on back to the baseline", failover.CommandLine(ff.fleet, "resume", sig...)}
		if errors.Is(err, failover.ErrRefused) {
			back = nextStep{"once what holds it is fixed, to go back to the baseline", failover.CommandLine(ff.fleet, "abort", sig...)}
		}
		steps := []nextStep{back}
		for _, c := range out.Instead {
			steps = append(steps, nextStep{"to finish the evacuation instead", withFleet(c, ff.fleet) + strings.Join(append([]string{""}, sig...), " ")})
		}
		return steps
	}
	if errors.Is(err, context.Canceled) && sub != "plan" {
		// Ctrl-C (or SIGTERM) stopped the run between or during steps, the lock released: a
		// hold like any other, with both ways on.
		return []nextStep{
			{"to go on from where it stopped", failover.CommandLine(ff.fleet, "resume", sig...)},
			{"to go back to the baseline", failover.CommandLine(ff.fleet, "abort", sig...)},
		}
	}
	if one := nextFailoverStep1(ff, sub, ev, out, err, sig); one.cmd != "" {
		return []nextStep{one}
	}
	return nil
}

func nextFailoverStep1(ff *failoverFlags, sub string, ev failover.Event, out *failover.Outcome, err error, sig []string) nextStep {
	switch {
	case errors.Is(err, failover.ErrNothingToResume), errors.Is(err, failover.ErrNoneOpen):
		return nextStep{"to see this fleet's runs and what is open", failover.CommandLine(ff.fleet, "status")}
	case errors.Is(err, failover.ErrRolledBack):
		return nextStep{"to see where it stands", failover.CommandLine(ff.fleet, "status")}
	case errors.Is(err, failover.ErrRollbackBlocked):
		return nextStep{"once what holds it is fixed, to go back to the baseline", failover.CommandLine(ff.fleet, "abort", sig...)}
	case errors.Is(err, failover.ErrHeld):
		return nextStep{"once what holds it is fixed, to go on", failover.CommandLine(ff.fleet, "resume", sig...)}
	case errors.Is(err, failover.ErrRefused) && out != nil && out.Plan != nil && len(out.Plan.CouldMove) > 0 && (sub == "run" || sub == "restore"):
		args := append([]string{ev.Flags(), "--skip-blocked"}, sig...)
		if sub == "restore" {
			args[0] = "--region " + shell.Quote(ev.Region)
		}
		if len(out.Plan.Selected) > 0 {
			args = append(args, "--class", strings.Join(out.Plan.Selected, ","))
		}
		return nextStep{"to move " + strings.Join(out.Plan.CouldMove, ", ") + " and leave the blocked classes untouched", failover.CommandLine(ff.fleet, sub, args...)}
	}
	return nextStep{}
}
func (e *pasteableErr) Unwrap() error { return e.err }

var failoverHintRE = regexp.MustCompile(`lifeboat failover (plan|run|status|resume|abort|restore|unlock)\b( --fleet)?`)

// withFleet adds --fleet FLEET to every failover command msg names without one.
func withFleet(msg, flt string) string {
	return failoverHintRE.ReplaceAllStringFunc(msg, func(m string) string {
		if strings.HasSuffix(m, " --fleet") {
			return m
		}
		return m + " --fleet " + shell.Quote(flt)
	})
}

func (a *app) failoverPlanCmd() *cobra.Command {
	var ff failoverFlags
	c := &cobra.Command{
		Use:   "plan --fleet FILE (--region REGION [--action evacuate|restore] | --action spill) [--class NAME]... [--skip-blocked] [--signals FILE] [--immediate] [--override RULE]... [--out FILE] [-o text|json]",
		Short: "Print the steps a failover would take (no lock, no change)",
		Long: `Plan reads the router's weights and probes every region (the warm prober, /health, /metrics),
or, with --signals FILE, takes weights and signals from a recorded file ("what if eu-west-1 fails at
the evening peak?"), and prints the plan: for each step the weights of every class × region, the
receivers' predicted queue wait, the regions drained or withdrawn, and what cannot be placed.

The last line is the verdict. A plan that cannot reach its target — traffic it cannot place
(shed), a failback that stops short of the baseline — says HELD for safety with the rule and
what is left, and its JSON carries "complete": false, "rule", "reason" and "shed"; when an
assumed inflow decided it, "decided_by_assumption" names the measurement that would settle it.
"estimated_s" is the estimated duration in seconds, and "estimate" its parts: the steps, the
step_interval waits between them and the drains that may each take up to drain_timeout.

--class NAME (repeatable, or a comma list) plans those tenant classes only: every other class
stays exactly as it is on the router. --skip-blocked plans every class that can reach its
target and leaves the blocked ones untouched, each on a BLOCKED line with its rule and reason;
its verdict says PARTIAL, what is left and the command to run when they can move, and it exits
3, never 0. A plan that a blocked class refuses says which classes could move without it.

Exit codes: 0 a plan that reaches its target (or nothing to do); 3 refused (as the run would
be: a restore with no failover open, say), or a plan that cannot reach its target (held for
safety); 2 bad input; 4 the router or a store stayed unreachable.`,
		Example: `  lifeboat failover plan --fleet fleet.yaml --region eu-west-1
  lifeboat failover plan --fleet fleet.yaml --region eu-west-1 --signals peak.json -o json
  lifeboat failover plan --fleet fleet.yaml --region eu-west-1 --action restore`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			f, err := a.failoverFleet(&ff)
			if err != nil {
				return err
			}
			ev, err := ff.event(a.stderr)
			if err != nil {
				return err
			}
			rules, err := ff.rules(f, false)
			if err != nil {
				return err
			}
			if ev.Region != "" {
				if err := f.UnknownRegion(ev.Region); err != nil {
					return usageErr("%v", err)
				}
			}
			if err := ff.checkClasses(f); err != nil {
				return err
			}
			in := failover.InputFromFleet(f)
			in.Event, in.Immediate, in.Overrides = ev, ff.immediate, rules
			in.Only, in.SkipBlocked, in.Hint = ff.classes, ff.skipBlocked, true
			if ff.signals != "" {
				s, err := a.loadSignals(ff.signals, f)
				if err != nil {
					return err
				}
				in.Weights, in.States, in.Signals, in.Baseline, in.Transitions = s.Weights, s.States, s.Regions, s.Baseline, s.Transitions
				if r, err := fleet.OpenRouter(f); err == nil {
					in.MaxWeight = r.MaxWeight()
				}
			} else {
				e, closeFn, err := a.executor(ctx, f, &ff)
				if err != nil {
					return err
				}
				defer closeFn()
				in, err = e.LiveInput(ctx, failover.RunOptions{Event: ev, Immediate: ff.immediate, Overrides: rules, Classes: ff.classes, SkipBlocked: ff.skipBlocked})
				if err != nil {
					return &pasteableErr{err: err, fleet: ff.fleet, next: nextFailoverStep(&ff, cmd.Name(), ev, nil, err)}
				}
				in.OneReading = true // one probe of each region: no dwell can be seen
			}
			plan := failover.MakePlan(in)
			if ff.out != "" {
				if err := failover.WriteSavedPlan(ff.out, f, plan, time.Now()); err != nil {
					return fmt.Errorf("--out: %w", err)
				}
				defer fmt.Fprintf(a.stderr, "Plan saved to %s. Apply exactly this plan with: %s\n", ff.out, failover.CommandLine(ff.fleet, "run", "--plan", shell.Quote(ff.out), "--reason", "'…'"))
			}
			var stops []failover.StopResult
			if len(f.StopConditions) > 0 {
				stops = (&failover.StopChecker{Fleet: f}).Look(ctx, plan, rules)
			}
			if a.output == "json" {
				err = a.writeJSON(newPlanDoc(f, plan, stops))
				if !plan.Complete {
					fmt.Fprintf(a.stderr, "VERDICT: %s\n", withFleet(plan.Verdict(), ff.fleet))
				}
			} else {
				err = renderPlan(a.stdout, f, ff.fleet, plan, stops)
			}
			if err != nil {
				return err
			}
			if !plan.Complete {
				return &exitError{code: exitRefused}
			}
			return nil
		},
	}
	ff.common(c)
	ff.safety(c)
	ff.target(c, "evacuate (move every class off the region), restore (give it its traffic back), spill (load off regions over spill_start_ms)")
	c.Flags().StringVar(&ff.out, "out", "", "save the plan to FILE for 'failover run --plan FILE' (applied only while the router and signals still give it)")
	ff.selection(c)
	return c
}

func (a *app) failoverRunCmd() *cobra.Command {
	var ff failoverFlags
	c := &cobra.Command{
		Use:   "run --fleet FILE (--region REGION | --action spill) [--class NAME]... [--skip-blocked] [--plan FILE] [--reason TEXT] [--yes] [--allow-partial] [--rollback-on-fail] [--immediate] [--override RULE]...",
		Short: "Plan and carry out a failover under the lock, journaling every change",
		Long: `Run takes the lock in the fleet's state store (exit 3 naming the holder if someone has it),
probes every region with the warm prober (a region that is not warm is excluded; the plan is
made without it, or refused), shows the plan and asks (unless --yes), then applies each step:
journal the intent, change the router, read it back, journal the result. Between steps it waits
step_interval, re-reads the signals and checks the next step again; a failing check holds the
run (exit 1; --rollback-on-fail steps back to the baseline instead). A withdraw waits for the
region's in-flight requests to drain (or drain_timeout). A crash at any point is continued with
'lifeboat failover resume'.

After each step_interval the router is read again: if it no longer reads as this run last read
it back (a restart, a reload, another hand), the run holds with the drift named (exit 1), and
nothing is written over it.

A plan that cannot reach its target (traffic it cannot place; see 'failover plan') is applied
only when the operator accepts it: at the prompt, or with --allow-partial beside --yes; without
either it is refused (exit 3, nothing changed). Carried out, it ends "HELD for safety" (exit 3)
with the rule and what is left. A region an open failover evacuated never receives traffic from
a later evacuation or spill until it is restored.

--class NAME runs the plan for those tenant classes only; --skip-blocked moves every class that
can move and leaves the blocked ones untouched (accepted by the flag itself: no --allow-partial),
and ends "PARTIAL, held for safety" (exit 3) naming each blocked class's rule. The journal keeps
the classes the run covered: status, resume and rollback touch those only.

When the fleet has a trust: section, a manifest that no accepted key signed is refused (exit 3)
before the lock is taken: traffic is not moved to replicas of a manifest nobody vouched for.`,
		Example: `  lifeboat failover run --fleet fleet.yaml --region eu-west-1 --reason "INC-4411 eu-west-1 GPU pool lost"
  lifeboat failover run --fleet fleet.yaml --region eu-west-1 --immediate --yes --reason "region down"
  lifeboat failover run --fleet fleet.yaml --plan evacuate.plan.json --reason "INC-4411"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if ff.trusted, err = a.requireTrustedFleet(cmd.Context(), ff.fleet, "failover run"); err != nil {
				return err
			}
			if ff.planFile != "" {
				if ff.region != "" || ff.action != "" || ff.evacuate != "" || ff.spill || ff.immediate || len(ff.overrides) > 0 {
					return usageErr("--plan FILE carries its event, --immediate and overrides: give no --region, --action, --immediate or --override with it")
				}
				// --class and --skip-blocked are carried too; given again, they must say the same
				return a.failoverAct(cmd, &ff, failover.Event{}, false)
			}
			ev, err := ff.event(a.stderr)
			if err != nil {
				return err
			}
			if ev.Kind == failover.Restore {
				return usageErr("fail back with: %s", failover.CommandLine(ff.fleet, "restore", "--region", ev.Region))
			}
			return a.failoverAct(cmd, &ff, ev, false)
		},
	}
	ff.common(c)
	ff.safety(c)
	ff.acting(c)
	ff.target(c, "evacuate (move every class off the region), spill (load off regions over spill_start_ms)")
	c.Flags().StringVar(&ff.planFile, "plan", "", "apply exactly the plan 'failover plan --out FILE' saved; refused (exit 3) when the router or the signals changed it")
	ff.selection(c)
	return c
}

func (a *app) failoverRestoreCmd() *cobra.Command {
	var ff failoverFlags
	var region string
	c := &cobra.Command{
		Use:     "restore --fleet FILE --region REGION [--class NAME]... [--skip-blocked] [--reason TEXT] [--yes] [--allow-partial] [--hold-timeout D]",
		Short:   "Fail back: give a region its traffic back under the same rules",
		Example: `  lifeboat failover restore --fleet fleet.yaml --region eu-west-1 --reason "INC-1234 resolved"`,
		Long: `Restore moves each class back toward the weights it had before the failover (the journal's
baseline), ramped, only once the region is warm and under spill_stop_ms for failback_dwell.
A new process has seen the region for 0 s: restore observes it (the warm prober, then /health
and /metrics every step_interval, progress on stderr) until it has been warm and calm for
failback_dwell, for at most --hold-timeout (default: failback_dwell plus two step_intervals),
and refuses at once (exit 3) when the dwell cannot fit in what is left of --hold-timeout. A
failback that stops short of the baseline ends "HELD for safety" (exit 3).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if region == "" {
				return usageErr("restore needs --region REGION")
			}
			ff.dwellTimeout = !cmd.Flags().Changed("hold-timeout")
			return a.failoverAct(cmd, &ff, failover.Event{Kind: failover.Restore, Region: region}, false)
		},
	}
	ff.common(c)
	ff.safety(c)
	ff.acting(c)
	c.Flags().StringVar(&region, "region", "", "the region to give its traffic back")
	ff.selection(c)
	return c
}

// noAbortReason is the reason an abort without --reason is journaled (and its request sent) with.
const noAbortReason = "no reason given (failover abort without --reason)"

func (a *app) failoverAbortCmd() *cobra.Command {
	var ff failoverFlags
	var wait time.Duration
	c := &cobra.Command{
		Use:     "abort --fleet FILE [--reason TEXT] [--yes]",
		Short:   "Return to the weights before the failover, ramped and under the same rules",
		Example: `  lifeboat failover abort --fleet fleet.yaml --reason "receivers saturating"`,
		Args:    cobra.NoArgs,
		Long: `Abort steps every class back to the weights before the failover (the journal's baseline),
ramped and under the same rules.

While another operator's run holds the lock, abort asks it to stop instead: it writes an abort
request to the state store, and the run honours it between steps — it journals who asked and
why, then steps back to the baseline as abort does. This command waits (at most --wait) until
that run has let go of the lock and reports where it ended: exit 0 back at the baseline, 1
otherwise.

The journal records who aborted and why: without --reason (an abort is not refused for want of
one) the reason journaled is "` + noAbortReason + `".`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(ff.reason) == "" {
				// An abort is what someone reaches for in a hurry: like kubectl argo rollouts
				// abort it does not refuse for want of a reason, but the journal says it had none.
				ff.reason = noAbortReason
				fmt.Fprintf(a.stderr, "No --reason given: the abort is journaled with the reason %q (add --reason TEXT to say why).\n", ff.reason)
			}
			err := a.failoverAct(cmd, &ff, failover.Event{Kind: failover.Abort}, false)
			var held *failover.LockHeldError
			if !errors.As(err, &held) || held.Dead != "" || strings.HasPrefix(held.Lock.Operation, "failover abort") {
				return err
			}
			return a.requestAbort(cmd, &ff, held.Lock, wait)
		},
	}
	c.Flags().DurationVar(&wait, "wait", 10*time.Minute, "with a run holding the lock: how long to wait for it to honour the abort request")
	ff.common(c)
	ff.safety(c)
	ff.acting(c)
	return c
}

// requestAbort asks the run holding lock held to abort (through the state store), then waits
// until it lets go of the lock and says where it ended.
func (a *app) requestAbort(cmd *cobra.Command, ff *failoverFlags, held failover.Lock, wait time.Duration) error {
	ctx := cmd.Context()
	f, err := a.loadFleet(ff.fleet)
	if err != nil {
		return err
	}
	e, closeFn, err := a.executor(ctx, f, ff)
	if err != nil {
		return err
	}
	defer closeFn()
	req, err := e.RequestAbort(ctx, held, ff.reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "Abort requested of the run holding the lock of %s: %s (%s, token %d), as %s. It is honoured between steps; waiting at most %s.\n",
		fleetLine(f), providers.Sanitize(held.Holder, 200), providers.Sanitize(held.Operation, 64), held.Token, req.By, wait)
	w, err := e.AwaitAbort(ctx, req, wait)
	if err != nil {
		return err
	}
	again := failover.CommandLine(ff.fleet, "abort")
	if ff.reason != "" {
		again = failover.CommandLine(ff.fleet, "abort", "--reason", shell.Quote(providers.Sanitize(ff.reason, 200)))
	}
	switch {
	case w.TimedOut:
		return problem("the run holding the lock (token %d) has not honoured the abort request within --wait %s; it is honoured between steps: follow it with %s",
			held.Token, wait, failover.CommandLine(ff.fleet, "status"))
	case w.Dead != "":
		return problem("the run holding the lock (token %d) died before honouring the abort request (%s); its request is withdrawn and the router is as it left it. Abort it now (a dead holder's lock is taken over at once): %s",
			held.Token, providers.Sanitize(w.Dead, 200), again)
	case w.Silent > 0:
		return problem("the run holding the lock (token %d, %s) has not renewed it for its TTL %s on this host's clock: it is stopped or cut off from the state store and, by its own lease, writes nothing more; its request is withdrawn. Once no process of it runs, break its lock and abort: %s, then %s",
			held.Token, providers.Sanitize(held.Holder, 200), w.Silent, failover.CommandLine(ff.fleet, "unlock", "--id", shell.Quote(providers.Sanitize(held.ID, 64))), again)
	case !w.Lock.Released && w.Lock.Token != held.Token:
		return problem("the run the abort request was for (token %d) let go of the lock and a later one holds it now (%s, token %d); the request is withdrawn (it never applies to a later run). See %s",
			held.Token, providers.Sanitize(w.Lock.Holder, 200), w.Lock.Token, failover.CommandLine(ff.fleet, "status"))
	}
	st, err := e.Status(ctx)
	if err != nil && st == nil {
		return pasteable(err, ff.fleet)
	}
	if st.Done && st.Closed {
		fmt.Fprintf(a.stdout, "VERDICT: done: run %s aborted at the request and back at its baseline\n", st.Run)
		return nil
	}
	if st.Done && w.Withdrawn {
		return problem("run %s finished before it saw the abort request (it is honoured between steps; the request is withdrawn): it is not back at its baseline. Abort it now: %s",
			st.Run, again)
	}
	why := st.Held
	if why == "" {
		why = st.Failed
	}
	if why == "" {
		why = fmt.Sprintf("its journal ends at step %d of %d and names no hold", st.Applied, planSteps(st))
	}
	msg := fmt.Sprintf("run %s let go of the lock without reaching the baseline: %s", st.Run, providers.Sanitize(why, 500))
	if st.ResumeWill != "" {
		msg += "\nNext, " + providers.Sanitize(st.ResumeWill, 600) + ":\n  " + failover.CommandLine(ff.fleet, "resume")
	}
	for _, c := range st.Instead {
		msg += "\nOr, to finish the evacuation instead:\n  " + withFleet(c, ff.fleet)
	}
	if st.ResumeWill == "" && len(st.Instead) == 0 {
		msg += "; see " + failover.CommandLine(ff.fleet, "status") + ", then " + again
	}
	return problem("%s", msg)
}

// planSteps is the number of steps of a status's plan (0 without one).
func planSteps(st *failover.Status) int {
	if st.Plan == nil {
		return 0
	}
	return len(st.Plan.Steps)
}

func (a *app) failoverResumeCmd() *cobra.Command {
	var ff failoverFlags
	c := &cobra.Command{
		Use:     "resume --fleet FILE [--reason TEXT] [--override STOP-CONDITION]...",
		Short:   "Continue a crashed or held run from its journal, or re-assert a finished run's state",
		Example: `  lifeboat failover resume --fleet fleet.yaml`,
		Long: `Resume takes the lock, then reads this fleet's latest run from the journal (a run another fleet
sharing the state store wrote is never touched), probes every region as run does (the warm
prober), re-applies the last state the journal intended (routers forget runtime changes on
reload: the journal is the source of truth) and carries out the remaining steps with the same
checks. A finished run whose router no longer routes as it left it (a reload, a restart) is
re-asserted: its final state is checked, journaled as an intent, applied and read back.

Everything the journal says is re-validated against the fleet before any write: a plan with a
class or region the fleet lacks, weight outside a class's eligible regions, or a changed total
is refused (exit 3) and the router is left as it is; each state is then checked like a step
against the live signals (a failing check holds, exit 1). An expired failover is refused
(exit 3): restore or abort it.

The fleet's stop conditions are evaluated again before each write: a run they held goes on
once they pass. --override NAME goes on past a stop condition that still fails (journaled);
the rules the run was planned under stay as its start journaled them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ff.yes = true
			return a.failoverAct(cmd, &ff, failover.Event{}, true)
		},
	}
	ff.common(c)
	c.Flags().StringVar(&ff.reason, "reason", "", "why (journaled)")
	c.Flags().BoolVar(&ff.rollback, "rollback-on-fail", false, "when a check fails, step back to the baseline instead of holding")
	c.Flags().DurationVar(&ff.holdTimeout, "hold-timeout", 0, "re-check a failed step for this long before holding")
	c.Flags().StringArrayVar(&ff.overrides, "override", nil, "break-glass: go on past this stop condition (journaled; repeatable)")
	return c
}

// verdictLine is the last line of run, restore, abort and resume: what the outcome reached,
// impossible to miss.
func verdictLine(out *failover.Outcome, err error) string {
	switch {
	case err == nil && out.Reasserted:
		return fmt.Sprintf("VERDICT: done: run %s's final state re-asserted", out.Run)
	case err == nil && len(out.Plan.Classes) > 0:
		return fmt.Sprintf("VERDICT: done: %s reached its target for %s only (every other class left as it is)", out.Plan.Event, strings.Join(out.Plan.Classes, ", "))
	case err == nil:
		return fmt.Sprintf("VERDICT: done: %s reached its target", out.Plan.Event)
	case errors.Is(err, failover.ErrIncomplete):
		return "VERDICT: " + out.Held
	case errors.Is(err, failover.ErrHeld):
		return "VERDICT: HELD (exit 1): " + out.Held
	}
	return ""
}

// failoverFleet is the preamble of the failover subcommands that print: check -o, load --fleet.
func (a *app) failoverFleet(ff *failoverFlags) (*fleet.Fleet, error) {
	if err := a.checkOutput("text", "json"); err != nil {
		return nil, err
	}
	return a.loadFleet(ff.fleet)
}

// sameSelection refuses a --class or --skip-blocked given with run --plan that says otherwise
// than the saved plan: the file carries its selection, and applies only that.
func sameSelection(ff *failoverFlags, saved *failover.SavedPlan) error {
	given := slices.Sorted(slices.Values(ff.classes))
	given = slices.Compact(given)
	if len(ff.classes) > 0 && !slices.Equal(given, saved.Plan.Selected) || ff.skipBlocked && !saved.Plan.SkipBlocked {
		was := "every class"
		if len(saved.Plan.Selected) > 0 {
			was = "--class " + strings.Join(saved.Plan.Selected, ",")
		}
		if saved.Plan.SkipBlocked {
			was += " --skip-blocked"
		}
		now := ""
		if len(ff.classes) > 0 {
			now = "--class " + strings.Join(given, ",")
		}
		if ff.skipBlocked {
			now = strings.TrimSpace(now + " --skip-blocked")
		}
		return usageErr("--plan %s was made for %s, not %s: a saved plan applies only the selection it was made with; drop %s, or plan again with it: %s",
			ff.planFile, was, now, now, failover.CommandLine(ff.fleet, "plan", saved.Plan.Event.Flags(), now, "--out", shell.Quote(ff.planFile)))
	}
	return nil
}

// failoverAct runs, restores, aborts or resumes.
func (a *app) failoverAct(cmd *cobra.Command, ff *failoverFlags, ev failover.Event, resume bool) error {
	ctx := cmd.Context()
	if strings.TrimSpace(ff.reason) == "" {
		// The journal is what an auditor reads: a stated absence, not an empty field that could
		// be a lost one. (abort sets its own before it gets here.)
		ff.reason = "no reason given (failover " + cmd.Name() + " without --reason)"
	}
	f, err := a.failoverFleet(ff)
	if err != nil {
		return err
	}
	var saved *failover.SavedPlan
	if ff.planFile != "" {
		if saved, err = failover.ReadSavedPlan(ff.planFile, f); err != nil {
			if errors.Is(err, failover.ErrRefused) {
				return pasteable(err, ff.fleet)
			}
			return usageErr("--plan: %v", err)
		}
		ev, ff.immediate = saved.Plan.Event, saved.Plan.Immediate
		for _, r := range saved.Plan.Overrides {
			ff.overrides = append(ff.overrides, string(r))
		}
		if err := sameSelection(ff, saved); err != nil {
			return err
		}
		ff.classes, ff.skipBlocked = saved.Plan.Selected, saved.Plan.SkipBlocked
		ff.yes = failover.SavedPlanApproved(saved.Plan, ff.allowPartial) // as terraform apply PLANFILE
	}
	if ev.Region != "" {
		if err := f.UnknownRegion(ev.Region); err != nil {
			return usageErr("%v", err)
		}
	}
	rules, err := ff.rules(f, resume)
	if err != nil {
		return err
	}
	if err := ff.checkClasses(f); err != nil {
		return err
	}
	e, closeFn, err := a.executor(ctx, f, ff)
	if err != nil {
		return err
	}
	defer closeFn()
	if ff.dwellTimeout {
		ff.holdTimeout = f.Failover.FailbackDwell + 2*f.Failover.StepInterval
	}
	o := failover.RunOptions{Event: ev, Immediate: ff.immediate, Overrides: rules, Reason: ff.reason, RollbackOnFail: ff.rollback, HoldTimeout: ff.holdTimeout, AllowPartial: ff.allowPartial,
		Classes: ff.classes, SkipBlocked: ff.skipBlocked}
	if saved != nil {
		o.Saved, o.SavedName = saved.Plan, ff.planFile
	}
	o.Plan = func(p *failover.Plan) {
		// Shown before it is applied, so that it can be approved; with --yes under -q no one is
		// asked, and quiet means quiet.
		if a.output != "json" && !(a.quiet && ff.yes) {
			_ = renderPlan(a.stderr, f, ff.fleet, p, nil)
		}
	}
	if !ff.yes {
		o.Confirm = func(p *failover.Plan) bool {
			need := failover.ApprovalFor(p, ff.allowPartial, ff.skipBlocked)
			if in, ok := a.stdin.(*os.File); !ok || !isTTY(in.Fd()) {
				// No one to ask: say how to approve without a prompt.
				fmt.Fprintf(a.stderr, "stdin is not a terminal: reading the answer from it. To approve without a prompt, add %s (the plan above is for %s).\n", need.YesFlags, fleetLine(f))
			}
			if need.Partial {
				fmt.Fprintf(a.stderr, "This plan cannot reach its target: %s\nApply its %d steps to %s anyway (the outcome ends held for safety)? Type yes to go on: ", p.Verdict(), len(p.Steps), fleetLine(f))
				line, _ := bufio.NewReader(io.LimitReader(a.stdin, 1024)).ReadString('\n')
				return strings.TrimSpace(line) == "yes"
			}
			fmt.Fprintf(a.stderr, "Apply these %d steps to %s through %s? Type yes to go on: ", len(p.Steps), fleetLine(f), e.Router)
			line, _ := bufio.NewReader(io.LimitReader(a.stdin, 1024)).ReadString('\n')
			return strings.TrimSpace(line) == "yes"
		}
	}
	var out *failover.Outcome
	if resume {
		out, err = e.Resume(ctx, o)
	} else {
		out, err = e.Run(ctx, o)
	}
	if out != nil {
		if a.output == "json" {
			_ = a.writePeerJSON(out)
		} else {
			fmt.Fprintf(a.stdout, "Run %s: %d step(s) applied.\n", out.Run, out.Steps)
			if err == nil || errors.Is(err, failover.ErrIncomplete) && out.Steps > 0 {
				fmt.Fprintln(a.stdout, "Final weights:")
				renderWeights(a.stdout, f, out.Final)
			}
			if v := verdictLine(out, err); v != "" {
				fmt.Fprintln(a.stdout, withFleet(v, ff.fleet))
			} else if out.Held != "" {
				fmt.Fprintf(a.stdout, "HELD: %s\n", out.Held)
			}
		}
	}
	if err != nil && ev.Kind == failover.Restore && out != nil && out.Plan != nil && (out.Plan.Rule == failover.RuleDwell || out.Plan.Rule == failover.RuleWarm) {
		longer := max((2*max(ff.holdTimeout, f.Failover.FailbackDwell) + 2*f.Failover.StepInterval).Round(time.Second), time.Second)
		err = fmt.Errorf("%w; restore observed the region for --hold-timeout %s: to watch it longer, %s", err, ff.holdTimeout, failover.CommandLine(ff.fleet, "restore", "--region", ev.Region, "--hold-timeout", longer.String()))
		return pasteable(err, ff.fleet)
	}
	if err == nil || ff.fleet == "" {
		return err
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		// "context canceled" says nothing to the operator: say what stopped and where.
		switch {
		case out != nil && out.Run != "":
			err = fmt.Errorf("run %s stopped (%v) after %d step(s) applied; the lock is released and the journal says where it stopped: %w", out.Run, context.Cause(ctx), out.Steps, err)
		default:
			err = fmt.Errorf("stopped (%v): %w", context.Cause(ctx), err)
		}
	}
	return &pasteableErr{err: err, fleet: ff.fleet, next: nextFailoverStep(ff, cmd.Name(), ev, out, err)}
}

func (a *app) failoverStatusCmd() *cobra.Command {
	var ff failoverFlags
	var runs int
	var watch bool
	var every time.Duration
	c := &cobra.Command{
		Use:   "status --fleet FILE [--runs N] [--watch [--interval D]] [-o text|json|yaml]",
		Short: "Show the latest run from the journal, the recent runs, the lock, the router's weights, and drift",
		Example: `  lifeboat failover status --fleet fleet.yaml
  lifeboat failover status --fleet fleet.yaml --runs 30 -o json`,
		Long: `Status renders the journal of the latest run (who, when, why, every step applied, holds) and
reads the router. Drift — the router routes differently from what the journal says — exits 1, as
does an expired failover.

Below it, the fleet's recent runs (--runs N, newest first): action, started, ended, outcome, who
and steps applied. The outcome is running (its holder writes it), dead (the lock names a holder
gone on this host), interrupted (unfinished, the lock free), held, failed, aborted (stepped back to
the baseline), done or refused; a run whose journal holds an object that is not a valid record is
unreadable, with the reason, and the others are listed all the same.

--watch redraws the status every --interval until interrupted (Ctrl-C ends it, exit 0): the
run's step, when the next step is due, what holds it, the lock and the router. On a terminal the
screen is redrawn; otherwise each refresh is a new block.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if runs < 1 {
				return usageErr("--runs %d: want at least 1", runs)
			}
			if watch && a.output != "text" {
				return usageErr("--watch redraws text: give no -o %s with it", a.output)
			}
			if watch && every <= 0 {
				return usageErr("--interval %s: want a positive duration", every)
			}
			f, err := a.failoverFleet(&ff)
			if err != nil {
				return err
			}
			e, closeFn, err := a.executor(ctx, f, &ff)
			if err != nil {
				return err
			}
			defer closeFn()
			if watch {
				return a.watchStatus(ctx, f, e, every)
			}
			st, err := e.Status(ctx)
			if err != nil && (st == nil || st.RouterError == "") {
				return pasteable(err, ff.fleet)
			}
			routerErr := err // the journal and the lock are shown all the same
			recent, err := e.RecentRuns(ctx, runs)
			if err != nil {
				return pasteable(err, ff.fleet)
			}
			if a.output == "json" {
				err = a.writePeerJSON(&statusDoc{Status: st, Runs: recent, DriftFix: newDriftFix(f, st)})
			} else if err = renderStatus(a.stdout, f, st); err == nil {
				err = renderRuns(a.stdout, recent)
			}
			if err != nil {
				return err
			}
			if routerErr != nil {
				return pasteable(routerErr, ff.fleet)
			}
			switch {
			case len(st.JournalErrors) > 0 || st.LockError != "":
				why := slices.Clone(st.JournalErrors)
				if st.LockError != "" {
					why = append(why, st.LockError)
				}
				return problem("the state store holds objects that cannot be trusted: %s", strings.Join(why, "; "))
			case len(st.Drift) > 0:
				return withCode(exitProblem, fmt.Errorf("%w: %s", failover.ErrDrift, strings.Join(st.Drift, "; ")))
			case st.Expired && !st.Done:
				return problem("the failover expired at %s: restore or abort it", st.Expires.Format(time.RFC3339))
			}
			return nil
		},
	}
	ff.common(c)
	c.Flags().IntVar(&runs, "runs", defaultStatusRuns, "how many of the fleet's recent runs to list, newest first")
	c.Flags().BoolVarP(&watch, "watch", "w", false, "redraw every --interval until interrupted (text only)")
	c.Flags().DurationVar(&every, "interval", 2*time.Second, "with --watch: how often to redraw")
	return c
}

func (a *app) failoverUnlockCmd() *cobra.Command {
	var ff failoverFlags
	var id string
	c := &cobra.Command{
		Use:     "unlock --fleet FILE --id LOCK-ID [--reason TEXT]",
		Short:   "Break-glass: release the failover lock with this exact id (journaled)",
		Example: `  lifeboat failover unlock --fleet fleet.yaml --id LOCK-ID --reason "holder crashed"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if id == "" {
				return usageErr("unlock needs --id LOCK-ID (the id the lock-held message names)")
			}
			f, err := a.loadFleet(ff.fleet)
			if err != nil {
				return err
			}
			e, closeFn, err := a.executor(ctx, f, &ff)
			if err != nil {
				return err
			}
			defer closeFn()
			lk, err := e.Unlock(ctx, id, ff.reason)
			if err != nil {
				return withCode(exitRefused, &pasteableErr{err: err, fleet: ff.fleet})
			}
			fmt.Fprintf(a.stdout, "Lock %s of %s (since %s) released.\n", lk.ID, lk.Holder, lk.Since.Format(time.RFC3339))
			return nil
		},
	}
	c.Flags().StringVar(&ff.fleet, "fleet", "", "fleet file (required)")
	c.Flags().StringVar(&id, "id", "", "the lock's exact id")
	c.Flags().StringVar(&ff.reason, "reason", "", "why (journaled)")
	return c
}

func renderWeights(w io.Writer, f *fleet.Fleet, rs router.RouterState) {
	regions := f.RegionNames()
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "CLASS\t%s\n", strings.Join(regions, "\t"))
	for _, class := range sortedClassNames(f) {
		cells := make([]string, len(regions))
		for j, r := range regions {
			if !slices.Contains(f.Tenants[class], r) {
				cells[j] = "·"
				continue
			}
			cells[j] = fmt.Sprint(rs.Weights[class][r])
			if s := rs.States.Get(class, r); s != router.Ready {
				cells[j] += " " + string(s)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", class, strings.Join(cells, "\t"))
	}
	tw.Flush()
}

func renderStatus(w io.Writer, f *fleet.Fleet, st *failover.Status) error {
	if st.Run == "" {
		fmt.Fprintln(w, "No failover run in the journal.")
	} else {
		state := "in progress (or crashed: resume it)"
		switch st.State {
		case "running":
			state = "RUNNING (the lock is held by its holder)"
		case "interrupted":
			state = "INTERRUPTED (not finished, the lock is free)"
		case "dead":
			state = "DEAD (its holder is gone: " + providers.Sanitize(st.HolderDead, 200) + "): `lifeboat failover resume` takes it over at once and carries it on, `lifeboat failover abort` takes it over at once and undoes it"
		}
		switch {
		case st.Refused:
			state = "refused (nothing changed)"
		case st.Done && st.Held != "":
			state = "held: " + st.Held + " (held for safety: the run ended short of its target)"
		case st.Done:
			state = "done"
		case st.Held != "":
			state = "HELD: " + providers.Sanitize(st.Held, 500)
		case st.Failed != "":
			state = "FAILED: " + providers.Sanitize(st.Failed, 500)
		}
		fmt.Fprintf(w, "Run %s: %s — %s\n", st.Run, eventString(st.Event), withFleet(state, f.File))
		if st.Started != nil {
			fmt.Fprintf(w, "  by %s at %s: %q\n", providers.Sanitize(st.Holder, 200), st.Started.Format(time.RFC3339), providers.Sanitize(st.Reason, 500))
		}
		if rb := st.RolledBack; rb != nil && st.Plan != nil {
			fmt.Fprintf(w, "  steps applied: %d of %d, then turned back to the baseline (%s): %d of %d step(s) back applied\n",
				rb.Applied, rb.Steps, providers.Sanitize(rb.Why, 300), st.Applied, len(st.Plan.Steps))
		} else if st.Plan != nil {
			fmt.Fprintf(w, "  steps applied: %d of %d\n", st.Applied, len(st.Plan.Steps))
		}
		if st.Plan != nil {
			if len(st.Plan.Classes) > 0 {
				fmt.Fprintf(w, "  classes: %s (resume and re-assert touch these only)\n", strings.Join(st.Plan.Classes, ", "))
			}
			for _, b := range st.Plan.Blocked {
				fmt.Fprintf(w, "  left untouched: %s (%s): %s\n", b.Class, b.Rule, providers.Sanitize(b.Reason, 500))
			}
		}
		if st.Expires != nil {
			// The run's own deadline (the fleet's failover.expires after its start), not the
			// lock's lease: a failover is temporary.
			switch exp := st.Expires.Format(time.RFC3339); {
			case st.Closed:
				fmt.Fprintf(w, "  failover was to expire at %s (failover.expires after its start); it is over, back at the baseline\n", exp)
			case st.Expired:
				fmt.Fprintf(w, "  failover EXPIRED at %s (failover.expires after its start): restore or abort it; resume refuses\n", exp)
			case st.Done:
				fmt.Fprintf(w, "  failover expires at %s (failover.expires after its start): restore or abort before; after it, status exits 1 and resume refuses to re-assert it\n", exp)
			default:
				fmt.Fprintf(w, "  failover expires at %s (failover.expires after its start): restore or abort before; after it, status exits 1 and resume refuses\n", exp)
			}
		}
		for _, o := range st.Overrides {
			fmt.Fprintf(w, "  override: %s\n", o)
		}
		renderWaysOn(w, f, st)
	}
	for _, e := range st.JournalErrors {
		fmt.Fprintf(w, "JOURNAL: %s (not read past it)\n", providers.Sanitize(e, 500))
	}
	if st.LockError != "" {
		fmt.Fprintf(w, "LOCK: %s\n", providers.Sanitize(st.LockError, 500))
	} else if st.Lock != nil {
		fmt.Fprintf(w, "Lock %s held by %s since %s (%s), last renewed until %s by the holder's clock\n", providers.Sanitize(st.Lock.ID, 64), providers.Sanitize(st.Lock.Holder, 200),
			st.Lock.Since.Format(time.RFC3339), providers.Sanitize(st.Lock.Operation, 64), st.Lock.Expires.Format(time.RFC3339))
		if st.HolderDead != "" && st.State != "dead" {
			fmt.Fprintln(w, withFleet("  its holder is dead ("+providers.Sanitize(st.HolderDead, 200)+"): `lifeboat failover resume` takes the lock over at once", f.File))
		}
	} else {
		fmt.Fprintln(w, "Lock: free")
	}
	if st.RouterError != "" {
		fmt.Fprintf(w, "Router: UNREACHABLE: %s\n", providers.Sanitize(st.RouterError, 500))
		return nil
	}
	fmt.Fprintln(w, "Router:")
	renderWeights(w, f, st.Router)
	if len(st.Drift) > 0 {
		fmt.Fprintln(w, "DRIFT (router ≠ journal):")
		for _, d := range st.Drift {
			fmt.Fprintf(w, "  %s\n", d)
		}
		fix := newDriftFix(f, st)
		fmt.Fprintf(w, "  %s:\n    %s\n", fix.Why, strings.Join(fix.Commands, "\n    "))
	}
	return nil
}

// driftFix says how to put the router back where the journal says (docs/routers.md: a router
// forgets runtime changes on reload, and resume re-applies the journal) — or, for a run past its
// failover.expires, which resume refuses, what to do instead. Status prints it under DRIFT, and
// -o json carries it as "drift_fix".
type driftFix struct {
	Why      string   `json:"why"`
	Commands []string `json:"commands"`
}

func newDriftFix(f *fleet.Fleet, st *failover.Status) *driftFix {
	if len(st.Drift) == 0 {
		return nil
	}
	if st.Expired && (!st.Done || !st.Closed) {
		return &driftFix{"the run expired, so resume refuses to re-apply it: fail back or undo it",
			[]string{failover.CommandLine(f.File, "restore", "--region", "REGION"), failover.CommandLine(f.File, "abort")}}
	}
	return &driftFix{"re-apply the journal to the router (a reload or restart forgets runtime changes)", []string{failover.CommandLine(f.File, "resume")}}
}

// renderWaysOn says what resume would do with an unfinished run (for an abort or a rollback:
// go on back to the baseline, never the run it undid) and, when the way back is held, the
// command that finishes the evacuation instead — each pasteable.
func renderWaysOn(w io.Writer, f *fleet.Fleet, st *failover.Status) {
	if st.ResumeWill == "" || st.State == "running" {
		return
	}
	fmt.Fprintf(w, "  %s:\n    %s\n", providers.Sanitize(st.ResumeWill, 600), failover.CommandLine(f.File, "resume"))
	for _, c := range st.Instead {
		fmt.Fprintf(w, "  or finish the evacuation instead:\n    %s\n", withFleet(c, f.File))
	}
	if len(st.Instead) == 0 && st.Plan != nil && st.Plan.Event.Kind != failover.Abort {
		fmt.Fprintf(w, "  or undo it:\n    %s\n", failover.CommandLine(f.File, "abort"))
	}
}

func eventString(e *failover.Event) string {
	if e == nil {
		return "?"
	}
	return e.String()
}

func sortedClassNames(f *fleet.Fleet) []string {
	out := make([]string, 0, len(f.Tenants))
	for c := range f.Tenants {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

func sortedFloatKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		if !math.IsNaN(v) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
