package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"lifeboat/drills"
	"lifeboat/failover"
	"lifeboat/providers"
)

func (a *app) drillCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "drill",
		Short: "Run DR drills (verify → restore+boot → failover ramp → traffic check → failback → report) and show their history",
		Example: `  lifeboat drill run drills/lose-eu-west-1.yaml --report reports/
  lifeboat drill history --fleet fleet.yaml`,
	}
	c.AddCommand(a.drillRunCmd(), a.drillHistoryCmd())
	return c
}

func (a *app) drillRunCmd() *cobra.Command {
	var (
		reportDir          string
		approveAll, dryRun bool
	)
	c := &cobra.Command{
		Use:   "run FILE [--report DIR] [--approve-all] [--dry-run] [-o text|json|junit]",
		Short: "Run a drill file: lose a region on purpose, with game-day faults, and measure recovery against the SLA",
		Long: `A drill strings together everything Lifeboat checks and leaves evidence an auditor accepts.
Default steps (the drill file may reorder or skip them; teardown always runs):

  verify    quick-verify every region's replica, deep for the candidates'; repair a replica
            that failed from one that passed
  boot      restore and boot a candidate of every region with an exec launcher; prove it warm
  evacuate  move the lost region's traffic away with the failover executor (ramped,
            residency-safe, journaled), resuming after a killed orchestrator or a router outage
  traffic   synthetic requests per tenant class through the serving path, recording TTFT and
            where each landed; a request outside its class's eligible regions fails the drill
  hold      stay failed over for the drill's hold time
  failback  give the lost region its traffic back (failback dwell, ramped)
  reverify  quick-verify every replica again
  teardown  stop every candidate, put injected faults back, remove the temp dir, check the
            failover lock is released

Recovery time is computed from the failover journal: from the evacuation's start record (the
decision) to the first result with every class's traffic on warm receivers. Steps listed under
approve: in the drill file are asked for on the terminal; --approve-all approves them (CI).
--dry-run prints the steps and the failover plan from the router's current weights, changing
nothing. Each run is appended to the drill history in the fleet's state store.

With --report DIR: report.json (schema: drills/report.schema.json), report.md, report.html (one
self-contained file with SVG charts) and junit.xml.

Exit codes: 0 the drill met its SLA and every expected outcome; 1 it did not (the message says
what, and by how much the SLA was missed); 2 bad drill or fleet file; 4 a store stayed unreachable.`,
		Example: `  lifeboat drill run drills/lose-eu-west-1.yaml --report out/drill
  lifeboat drill run drill.yaml --approve-all -o junit > drill.xml     # CI
  lifeboat drill run drill.yaml --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := a.checkOutput("text", "json", "junit"); err != nil {
				return err
			}
			r, err := a.drillRunner(args[0])
			if err != nil {
				return err
			}
			if dryRun {
				return a.drillDryRun(ctx, r)
			}
			r.Approve = a.approver(approveAll)
			r.OnStep = func(s drills.StepResult) {
				if s.Status == "" {
					fmt.Fprintf(a.stderr, "▶ %s\n", s.Name)
					return
				}
				fmt.Fprintf(a.stderr, "  %s %s in %.2fs: %s\n", s.Name, s.Status, s.Seconds, firstLine(s.Detail))
			}
			fmt.Fprintf(a.stderr, "drill %s: losing %s of %s (RTO %s)\n", r.Drill.Name, r.Drill.Lose, r.Fleet.Model.Name, rtoOf(r))
			rep, err := r.Run(ctx)
			if errors.Is(err, drills.ErrInvalidDrill) {
				return usageErr("%v", err)
			} else if err != nil {
				return err
			}
			if st, err := a.openStore(ctx, r.Fleet.State); err == nil {
				if err := drills.AppendHistory(ctx, st, rep); err != nil {
					fmt.Fprintf(a.stderr, "lifeboat: %v\n", err)
				}
				st.Close()
			}
			if reportDir != "" {
				if err := drills.WriteReports(reportDir, rep); err != nil {
					return err
				}
			}
			switch a.output {
			case "json":
				if err := a.writeJSON(rep); err != nil {
					return err
				}
			case "junit":
				if err := a.writeJUnit(drills.JUnit(rep)); err != nil {
					return err
				}
			default:
				renderDrill(a.stdout, rep, reportDir)
			}
			if err := rep.Err(); err != nil {
				return problem("%v", err)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&reportDir, "report", "", "write report.json, report.md, report.html and junit.xml into DIR")
	f.BoolVar(&approveAll, "approve-all", false, "approve every approval step (CI, scheduled drills)")
	f.BoolVar(&dryRun, "dry-run", false, "print the steps and the failover plan; change nothing")
	_ = c.MarkFlagDirname("report")
	return c
}

func rtoOf(r *drills.Runner) time.Duration {
	if r.Drill.RTO > 0 {
		return r.Drill.RTO
	}
	return r.Fleet.SLA.RTO
}

// drillRunner reads the drill, its fleet and the fleet's manifest.
func (a *app) drillRunner(file string) (*drills.Runner, error) {
	d, err := drills.Read(file)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	fl, err := failover.ReadFleet(d.Fleet)
	if err != nil {
		return nil, usageErr("%s: fleet: %v", file, err)
	}
	m, err := a.readManifest(fl.Model.Manifest)
	if err != nil {
		return nil, err
	}
	r := &drills.Runner{Drill: d, Fleet: fl, Manifest: m, Log: a.log, Command: selfCommand, Open: a.openStore}
	if err := r.Check(); err != nil {
		return nil, usageErr("%v", err)
	}
	return r, nil
}

// approver asks on the terminal, or approves everything with --approve-all. Without a terminal
// and without --approve-all an approval step is refused (and the drill fails, saying so).
func (a *app) approver(all bool) func(context.Context, string) (bool, error) {
	if all {
		return func(context.Context, string) (bool, error) { return true, nil }
	}
	f, ok := a.stdin.(*os.File)
	if !ok || !isTTY(f.Fd()) {
		return func(_ context.Context, step string) (bool, error) {
			return false, fmt.Errorf("step %s needs approval and there is no terminal to ask: run with --approve-all", step)
		}
	}
	rd := bufio.NewReader(a.stdin)
	return func(_ context.Context, step string) (bool, error) {
		fmt.Fprintf(a.stderr, "approve step %s? [y/N] ", step)
		line, err := rd.ReadString('\n')
		if err != nil && err != io.EOF {
			return false, err
		}
		ans := strings.ToLower(strings.TrimSpace(line))
		return ans == "y" || ans == "yes", nil
	}
}

// drillDryRun prints what the drill would do and the evacuation plan from the router's current
// weights, assuming every other region with an endpoint or a launcher comes up warm and calm.
func (a *app) drillDryRun(ctx context.Context, r *drills.Runner) error {
	d, fl := r.Drill, r.Fleet
	router, err := failover.OpenRouter(fl)
	if err != nil {
		return usageErr("%v", err)
	}
	rs, err := router.Read(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", router, err)
	}
	sig := map[string]failover.RegionSignal{}
	zero, none := 0.0, 0
	for n, reg := range fl.Regions {
		if reg.Endpoint != "" || reg.Launcher != nil {
			sig[n] = failover.RegionSignal{Warm: true, Healthy: true, QueueWaitMS: &zero, Running: &none}
		}
	}
	in := failover.InputFromFleet(fl)
	in.Weights, in.States, in.Signals, in.MaxWeight = rs.Weights, rs.States, sig, router.MaxWeight()
	in.Event = failover.Event{Kind: failover.Evacuate, Region: d.Lose}
	plan := failover.MakePlan(in)
	if a.output == "json" {
		return a.writeJSON(map[string]any{"drill": d.Name, "steps": d.Order(), "skip": d.Skip, "approve": d.Approve, "faults": d.Faults, "expectations": d.Expect, "plan": plan, "dry_run": true})
	}
	w := a.stdout
	fmt.Fprintf(w, "Drill %s (dry run: nothing changes)\n  fleet %s, lose %s, RTO %s, router %s\n", d.Name, fl.File, d.Lose, rtoOf(r), providers.Redact(router.String()))
	fmt.Fprintf(w, "  steps: %s\n", strings.Join(d.Order(), " → "))
	if len(d.Approve) > 0 {
		fmt.Fprintf(w, "  approval before: %s\n", strings.Join(d.Approve, ", "))
	}
	for _, f := range d.Faults {
		fmt.Fprintf(w, "  fault: %s\n", f.Name)
	}
	for _, e := range d.Expect {
		fmt.Fprintf(w, "  expect: %s\n", e.Description)
	}
	fmt.Fprintln(w, "Evacuation plan (every other region assumed warm and calm):")
	renderPlanSteps(w, plan)
	return nil
}

func renderPlanSteps(w io.Writer, plan *failover.Plan) {
	if plan == nil {
		return
	}
	if plan.Refused {
		fmt.Fprintf(w, "  REFUSED (%s): %s\n", plan.Rule, plan.Reason)
		return
	}
	cur := plan.Start.Clone()
	for i, st := range plan.Steps {
		cur.Weights.Apply(st.Weights)
		var parts []string
		for _, c := range slices.Sorted(mapKeys(st.Weights)) {
			var rs []string
			for _, r := range slices.Sorted(mapKeys(cur.Weights[c])) {
				rs = append(rs, fmt.Sprintf("%s %d", r, cur.Weights[c][r]))
			}
			parts = append(parts, c+": "+strings.Join(rs, ", "))
		}
		extra := ""
		if len(st.Drain) > 0 {
			extra += " drain " + strings.Join(st.Drain, ",")
		}
		if len(st.Withdraw) > 0 {
			extra += " withdraw " + strings.Join(st.Withdraw, ",")
		}
		fmt.Fprintf(w, "  step %d: %s%s\n", i+1, strings.Join(parts, " | "), extra)
	}
	if plan.Hold != "" {
		fmt.Fprintf(w, "  stops short: %s\n", plan.Hold)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func check(ok bool) string {
	if ok {
		return "✔"
	}
	return "✘"
}

// renderDrill is the text result: plan, steps, faults, expectations, recovery vs SLA, verdict.
func renderDrill(w io.Writer, rep *drills.Report, reportDir string) {
	fmt.Fprintf(w, "Drill %s: lose %s of %s via %s\n", rep.Drill, rep.Lost, rep.Model, rep.Router)
	if rep.Plan != nil {
		fmt.Fprintln(w, "Evacuation plan:")
		renderPlanSteps(w, rep.Plan)
	}
	fmt.Fprintln(w, "Steps:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range rep.Steps {
		fmt.Fprintf(tw, "  %s\t%s\t%.2fs\t%s\n", s.Name, strings.ToUpper(s.Status), s.Seconds, firstLine(s.Detail))
	}
	tw.Flush()
	if len(rep.Faults) > 0 {
		fmt.Fprintln(w, "Faults:")
		for _, f := range rep.Faults {
			verdict := "DETECTED"
			if !f.Detected {
				verdict = "UNDETECTED"
			}
			fmt.Fprintf(w, "  %s %-10s %s: %s\n", check(f.Detected), verdict, f.Name, f.Evidence)
		}
	}
	fmt.Fprintln(w, "Expected outcomes:")
	for _, e := range rep.Expect {
		fmt.Fprintf(w, "  %s %s: %s\n", check(e.Met), e.Description, e.Evidence)
	}
	for _, c := range rep.Classes {
		fmt.Fprintf(w, "Traffic %s (eligible %s): %d request(s), %d failed, %d outside; TTFT p50 %.1f ms, max %.1f ms\n",
			c.Class, strings.Join(c.Eligible, ", "), c.Requests, c.Failed, c.Outside, c.TTFTP50MS, c.TTFTMaxMS)
	}
	rec := "not measured"
	if rep.SLA.RecoverySeconds != nil {
		rec = fmt.Sprintf("%.2fs", *rep.SLA.RecoverySeconds)
	}
	fmt.Fprintf(w, "Recovery time (from the journal): %s vs RTO %gs: %s\n", rec, rep.SLA.RTOSeconds, rep.SLA.Detail)
	fmt.Fprintf(w, "Verdict: %s\n", rep.Verdict)
	if reportDir != "" {
		fmt.Fprintf(w, "Report: %s (and report.md, report.json, junit.xml)\n", filepath.Join(reportDir, drills.ReportHTML))
	}
}

func (a *app) drillHistoryCmd() *cobra.Command {
	var fleetFile, state string
	c := &cobra.Command{
		Use:   "history (--fleet FILE | --state URL) [-o text|json]",
		Short: "Show recovery time and failures across drill runs (a trend table)",
		Example: `  lifeboat drill history --fleet fleet.yaml
  lifeboat drill history --state s3://dr-state/lifeboat/ -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := a.checkOutput("text", "json"); err != nil {
				return err
			}
			if (fleetFile == "") == (state == "") {
				return usageErr("drill history needs --fleet FILE or --state URL")
			}
			if fleetFile != "" {
				fl, err := failover.ReadFleet(fleetFile)
				if err != nil {
					return usageErr("%v", err)
				}
				if fl.State == "" {
					return usageErr("%s has no state store (state:)", fleetFile)
				}
				state = fl.State
			}
			st, err := a.openStore(ctx, state)
			if err != nil {
				return err
			}
			defer st.Close()
			h, err := drills.History(ctx, st)
			if err != nil {
				return err
			}
			if a.output == "json" {
				return a.writeJSON(map[string]any{"state": providers.Redact(st.String()), "runs": h})
			}
			renderHistory(a.stdout, h)
			return nil
		},
	}
	c.Flags().StringVar(&fleetFile, "fleet", "", "the fleet file (its state store holds the history)")
	c.Flags().StringVar(&state, "state", "", "the state store URL")
	return c
}

func renderHistory(w io.Writer, h []drills.HistoryEntry) {
	if len(h) == 0 {
		fmt.Fprintln(w, "No drill has run yet.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STARTED\tDRILL\tLOST\tVERDICT\tRECOVERY\tRTO\tMARGIN\tFAULTS DETECTED\tTREND\tFAILED")
	var prev *float64
	for _, e := range h {
		rec, margin, trend := "—", "—", ""
		if e.RecoverySeconds != nil {
			rec = fmt.Sprintf("%.2fs", *e.RecoverySeconds)
			margin = fmt.Sprintf("%+.2fs", *e.RecoverySeconds-e.RTOSeconds)
			if prev != nil && *prev > 0 {
				trend = fmt.Sprintf("%+.0f%%", (*e.RecoverySeconds-*prev) / *prev * 100)
			}
			prev = e.RecoverySeconds
		}
		failed := strings.Join(append(append([]string{}, e.StepsFailed...), e.ExpectFailed...), "; ")
		if failed == "" {
			failed = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%gs\t%s\t%d/%d\t%s\t%s\n", e.Started.Format("2006-01-02 15:04:05"), e.Drill, e.Lost, e.Verdict, rec, e.RTOSeconds, margin, e.Detected, e.Faults, trend, failed)
	}
	tw.Flush()
	pass := 0
	for _, e := range h {
		if e.OK {
			pass++
		}
	}
	fmt.Fprintf(w, "%d run(s): %d passed, %d failed\n", len(h), pass, len(h)-pass)
}
