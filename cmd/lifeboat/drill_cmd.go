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
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"lifeboat/drills"
	"lifeboat/failover"
	"lifeboat/fleet"
	"lifeboat/manifest"
	"lifeboat/manifest/signature"
	"lifeboat/providers"
	"lifeboat/providers/localfile"
)

func (a *app) drillCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "drill",
		Short: "Run DR drills (verify → restore+boot → failover ramp → traffic check → failback → report) and show their history",
		Example: `  lifeboat drill run drills/lose-eu-west-1.yaml --report reports/
  lifeboat drill history --fleet fleet.yaml`,
	}
	c.AddCommand(a.drillRunCmd(), a.drillCleanupCmd(), a.drillHistoryCmd())
	return c
}

func (a *app) drillRunCmd() *cobra.Command {
	var (
		reportDir, signKey                              string
		approveAll, dryRun, fromCurrent, ignoreCalendar bool
	)
	c := &cobra.Command{
		Use:   "run FILE [--report DIR [--sign-key KEY]] [--approve-all] [--from-current] [--ignore-calendar] [--dry-run] [-o text|json|junit]",
		Short: "Run a drill file: lose a region on purpose, with game-day faults, and measure recovery against the SLA",
		Long: `A drill strings together everything Lifeboat checks and leaves evidence an auditor accepts.
Default steps (the drill file may reorder or skip them; teardown always runs):

  verify    quick-verify every region's replica, deep for the candidates' and where a store
            keeps no checksums; repair a replica that failed from one that passed outside the
            lost region (never from it)
  boot      restore and boot a candidate of every other region with a launcher; prove it warm.
            The lost region is never a candidate: when it has a launcher, a stand-in plays its
            own serving (before the loss, after the failback), restored from another region's
            replica
  evacuate  move the lost region's traffic away with the failover executor (ramped,
            residency-safe, journaled), resuming after a killed orchestrator or a router outage
  traffic   synthetic requests per tenant class through the serving path, recording TTFT and
            where each landed; a request outside its class's eligible regions fails the drill
  hold      stay failed over for the drill's hold time
  failback  give the lost region its traffic back (failback dwell, ramped)
  reverify  verify every replica again (deep where a store keeps no checksums); a copy left
            UNVERIFIED makes the step INCONCLUSIVE and the drill FAIL
  teardown  return the router to the baseline the drill found (a ramped abort), stop every
            candidate, put injected faults back, remove the temp dir, check the failover lock
            is released; whatever cannot be restored is reported left behind (exit 1)

Recovery time is computed from the failover journal: from the evacuation's start record (the
decision) to the first router write, read back, with every class's traffic on warm receivers:
the traffic shift only, not the restore and boot before it. Steps listed under
approve: in the drill file are asked for on the terminal; --approve-all approves them (CI).
Without a terminal and without --approve-all such a drill does not start (exit 2, nothing
recorded). --dry-run prints the steps and the failover plan from the router's current weights,
changing nothing. Each run is appended to the drill history in the fleet's state store (an
interrupted one as INTERRUPTED, after its teardown).

Before it changes anything the drill records in the state store (drills/active/) the router's
weights, a copy of every file it will break and the candidates it starts. It refuses to start
(exit 3) while a previous drill's record is open (its process died: run 'lifeboat drill
cleanup FILE'), or while a failover run left the router off the fleet's baseline (the run is
named) — unless --from-current, which takes the router as found as the drill's baseline.

With --report DIR: report.json (schema: drills/report.schema.json), report.md, report.html (one
self-contained file with SVG charts) and junit.xml. With --sign-key KEY too, report.json — which
holds the evidence: every digest, approval and journal record — is signed with that private key:
report.json.sigstore.json beside it, checked by 'lifeboat manifest verify-sig DIR/report.json
--key PUB' or cosign verify-blob (docs/signing.md).

A drill file's calendar (blocked_windows, blocked_dates, blocking_conditions: docs/drill.md)
is when it does not start: run inside a blocked window or on a blocked date, or while one of its
blocking stop conditions fails (or cannot be evaluated), the drill is skipped — exit 0, one line
saying why, and a SKIPPED entry in the drill history; nothing changes. Every run honours it (a
cron job needs no flag); --ignore-calendar runs it anyway (a person who means to).

When the fleet has a trust: section, the drill refuses (exit 3) a manifest that no accepted key
signed, before anything changes.

Exit codes: 0 the drill met its SLA and every expected outcome; 1 it did not (the message says
what, and by how much the SLA was missed, or what teardown left behind); 2 bad drill or fleet
file, or approvals without a terminal; 3 refused (leftovers, router not at the baseline); 4 a
store stayed unreachable; 130/143 interrupted (after the teardown).`,
		Example: `  lifeboat drill run drills/lose-eu-west-1.yaml --report out/drill
  lifeboat drill run drill.yaml --approve-all -o junit > drill.xml     # CI
  lifeboat drill run drill.yaml --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := a.checkOutput("text", "json", "junit"); err != nil {
				return err
			}
			r, err := a.drillRunner(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			// The key is read and decrypted once, here, before any candidate is launched: a
			// key file changed or removed during the drill, or the environment, is not consulted
			// again (and the password never reaches a candidate: its environment is an allowlist).
			var signer *signature.Signer
			if signKey != "" {
				if reportDir == "" {
					return usageErr("--sign-key signs the report's evidence: give --report DIR too")
				}
				if signer, err = a.loadSigner(signKey); err != nil {
					return err
				}
			}
			if !dryRun {
				if err := r.EnforceTrust(ctx); err != nil {
					return err
				}
			}
			if !dryRun && !ignoreCalendar {
				// before anything is written (the report directory included)
				if skipped, err := a.drillSkip(ctx, r); skipped || err != nil {
					return err
				}
			}
			if reportDir != "" {
				// before the drill, not after it: the directory is ours, private, no link
				if err := localfile.PrepareDir(reportDir, "report directory"); err != nil {
					return usageErr("--report: %v", err)
				}
			}
			if dryRun {
				return a.drillDryRun(ctx, r)
			}
			if err := drills.CheckApprovals(r.Drill, approveAll, a.canAsk()); err != nil {
				return usageErr("%v", err) // nothing ran, nothing is recorded
			}
			r.Approve, r.ApproveVia = a.approver(approveAll, r)
			r.FromCurrent = fromCurrent
			r.OnStep = func(s drills.StepResult) {
				if s.Status == "" {
					fmt.Fprintf(a.stderr, "▶ %s\n", s.Name)
					return
				}
				fmt.Fprintf(a.stderr, "  %s %s in %.2fs: %s\n", s.Name, s.Status, s.Seconds, firstLine(s.Detail))
			}
			fmt.Fprintf(a.stderr, "drill %s: losing %s of %s (RTO %s)\n", r.Drill.Name, r.Drill.Lose, r.Fleet.Model.Name, rtoOf(r))
			rep, err := r.Run(ctx)
			if err != nil {
				return err // exitTable: invalid drill 2, not at baseline or leftovers 3
			}
			fin, err := r.Finish(ctx, rep, drills.FinishOptions{ReportDir: reportDir, Signer: signer,
				Notify: func(rep *drills.Report) { a.notifyDrill(r.Fleet, r.Drill.Fleet, rep) }, // fleet notify: the verdict
				Warn:   func(w string) { fmt.Fprintf(a.stderr, "lifeboat: %s\n", w) }})
			if err != nil {
				return err
			}
			if fin.SignedBy != "" {
				fmt.Fprintf(a.stderr, "report signed with key %s: %s\n", fin.SignedBy, fin.Signature)
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
	f.StringVar(&signKey, "sign-key", "", "sign report.json (the evidence) with this PEM private key: report.json.sigstore.json beside it")
	f.BoolVar(&approveAll, "approve-all", false, "approve every approval step (CI, scheduled drills)")
	f.BoolVar(&dryRun, "dry-run", false, "print the steps and the failover plan; change nothing")
	f.BoolVar(&ignoreCalendar, "ignore-calendar", false, "run even inside a blocked window or date of the drill file, or while a blocking condition fails")
	f.BoolVar(&fromCurrent, "from-current", false, "start even though a failover run left the router off the fleet's baseline: the router as found is the drill's baseline")
	_ = c.MarkFlagDirname("report")
	return c
}

// drillSkip checks the drill's calendar now: inside a blocked window or date, or with a
// blocking condition failing, it prints one line saying why, records the skip in the drill
// history and reports true (the drill exits 0, nothing changed).
func (a *app) drillSkip(ctx context.Context, r *drills.Runner) (bool, error) {
	why, _, err := r.Skip(ctx)
	if err != nil || why == "" {
		return false, err
	}
	st, err := a.openStateStore(ctx, r.Fleet.State)
	if err != nil {
		return false, err
	}
	defer st.Close()
	if err := drills.AppendSkip(ctx, st, r.Drill, time.Now(), why); err != nil {
		return false, err
	}
	fmt.Fprintf(a.stdout, "drill %s skipped: %s (recorded in the drill history; --ignore-calendar runs it anyway)\n", r.Drill.Name, why)
	return true, nil
}

func rtoOf(r *drills.Runner) time.Duration {
	if r.Drill.RTO > 0 {
		return r.Drill.RTO
	}
	return r.Fleet.SLA.RTO
}

// drillRunner reads the drill, its fleet and the fleet's manifest.
func (a *app) drillRunner(ctx context.Context, file string) (*drills.Runner, error) {
	d, err := drills.Read(file)
	var de *drills.DrillError
	if errors.As(err, &de) && de.Partial != nil && de.Partial.Fleet != "" {
		// Check what did decode against the fleet too, so that every mistake is reported at once.
		if fl, ferr := fleet.Read(de.Partial.Fleet); ferr == nil {
			r := &drills.Runner{Drill: de.Partial, Fleet: fl, Earlier: de.Problems}
			if cerr := r.Check(); cerr != nil {
				return nil, usageErr("%v", cerr)
			}
		}
	}
	if err != nil {
		return nil, usageErr("%v", err)
	}
	fleetBytes, err := localfile.ReadFile(d.Fleet, fleet.MaxBytes)
	if err != nil {
		return nil, usageErr("%s: fleet: %v", file, err)
	}
	fl, err := fleet.Parse(fleetBytes, d.Fleet)
	if err != nil {
		return nil, usageErr("%s: fleet: %v", file, err)
	}
	mBytes, err := a.manifestBytes(ctx, fl.Model.Manifest)
	if err != nil {
		return nil, fmt.Errorf("%s: model.manifest: %w", fl.File, err)
	}
	m, err := manifest.Parse(mBytes, fl.Model.Manifest)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	r := &drills.Runner{Drill: d, Fleet: fl, Manifest: m, Log: a.log, Command: selfCommand, Open: a.opener(fl.State),
		Version: versionString(), FleetDigest: drills.DigestBytes(d.Fleet, fleetBytes), ManifestDigest: drills.DigestBytes(fl.Model.Manifest, mBytes),
		OpenSigned: a.signedOpener(manifest.MaxManifestBytes), Warn: func(w string) { fmt.Fprintln(a.stderr, w) }}
	if err := r.Check(); err != nil {
		return nil, usageErr("%v", err)
	}
	return r, nil
}

// canAsk says whether a person can be asked: standard input is a terminal.
func (a *app) canAsk() bool {
	f, ok := a.stdin.(*os.File)
	return ok && isTTY(f.Fd())
}

// approver is drills.Approvals with the terminal as the one to ask (when there is one). The
// question names the drill, the region it loses and the fleet, as the failover prompts do, so
// that a drill on prod is not approved for one on staging.
func (a *app) approver(all bool, r *drills.Runner) (func(context.Context, string) (bool, error), string) {
	if !a.canAsk() {
		return drills.Approvals(all, nil)
	}
	rd := bufio.NewReader(a.stdin)
	return drills.Approvals(all, func(_ context.Context, step string) (bool, error) {
		fmt.Fprintf(a.stderr, "approve step %s of drill %s (losing %s) on %s? [y/N] ", step, r.Drill.Name, r.Drill.Lose, fleetLine(r.Fleet))
		line, err := rd.ReadString('\n')
		if err != nil && err != io.EOF {
			return false, err
		}
		ans := strings.ToLower(strings.TrimSpace(line))
		return ans == "y" || ans == "yes", nil
	})
}

// drillDryRun prints what the drill would do and the evacuation plan from the router's current
// weights, assuming every other region with an endpoint or a launcher comes up warm and calm.
func (a *app) drillDryRun(ctx context.Context, r *drills.Runner) error {
	d, fl := r.Drill, r.Fleet
	router, err := fleet.OpenRouter(fl)
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
	fmt.Fprintln(w, "Evidence:")
	for _, e := range rep.EvidenceRows() {
		if e.Key == "lifeboat.report_digests" && reportDir == "" {
			continue
		}
		fmt.Fprintf(w, "  %s: %s\n", e.Label, e.Value)
	}
	fmt.Fprintf(w, "Verdict: %s\n", rep.Verdict)
	if reportDir != "" {
		fmt.Fprintf(w, "Report: %s (and report.md, report.json, junit.xml, SHA256SUMS)\n", filepath.Join(reportDir, drills.ReportHTML))
	}
}

func (a *app) drillHistoryCmd() *cobra.Command {
	var fleetFile, state, verifyDir string
	c := &cobra.Command{
		Use:   "history (--fleet FILE | --state URL) [--verify REPORT_DIR] [-o text|json]",
		Short: "Show recovery time and failures across drill runs (a trend table), or check a report against the history",
		Long: `Prints one row per recorded drill run: recovery time, RTO, margin (time to spare, or by how
much the RTO was missed), faults detected, change in recovery against the previous run, and what
failed (on a line of its own, wrapped to the terminal).

--verify REPORT_DIR checks a report directory written by drill run --report against the SHA-256
digests the history recorded for that run when it wrote it: exit 0 when every file matches, 1
naming each file that differs or is missing. Only the state store's history is trusted (the
directory's SHA256SUMS is for sha256sum -c, and is not read).`,
		Example: `  lifeboat drill history --fleet fleet.yaml
  lifeboat drill history --state s3://dr-state/lifeboat/ -o json
  lifeboat drill history --fleet fleet.yaml --verify reports/2026-q4`,
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
				fl, err := fleet.Read(fleetFile)
				if err != nil {
					return usageErr("%v", err)
				}
				if fl.State == "" {
					return usageErr("%s has no state store (state:)", fleetFile)
				}
				state = fl.State
			}
			if verifyDir != "" {
				if fi, err := os.Stat(verifyDir); err != nil || !fi.IsDir() {
					return usageErr("--verify %s: not a report directory", verifyDir)
				}
			}
			st, err := a.openStateStore(ctx, state)
			if err != nil {
				return err
			}
			defer st.Close()
			h, err := drills.History(ctx, st)
			if err != nil {
				return err
			}
			if verifyDir != "" {
				v := drills.VerifyReports(verifyDir, h)
				if a.output == "json" {
					if err := a.writeJSON(v); err != nil {
						return err
					}
				} else {
					renderVerification(a.stdout, v)
				}
				if err := v.Err(); err != nil {
					return problem("%v", err)
				}
				return nil
			}
			if a.output == "json" {
				return a.writePeerJSON(&map[string]any{"state": providers.Redact(st.String()), "runs": h})
			}
			renderHistory(a.stdout, h, a.termWidth())
			return nil
		},
	}
	c.Flags().StringVar(&fleetFile, "fleet", "", "the fleet file (its state store holds the history)")
	c.Flags().StringVar(&state, "state", "", "the state store URL")
	c.Flags().StringVar(&verifyDir, "verify", "", "check the report files in `REPORT_DIR` against the digests the history recorded")
	_ = c.MarkFlagDirname("verify")
	return c
}

// termWidth is stdout's terminal width, or 100 columns when it is not a terminal.
func (a *app) termWidth() int {
	if f, ok := a.stdout.(*os.File); ok && isTTY(f.Fd()) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w >= 40 {
			return w
		}
	}
	return 100
}

// peerText makes a string read back from the state store safe for one terminal line.
func peerText(s string, max int) string { return providers.Sanitize(s, max) }

func renderVerification(w io.Writer, v *drills.Verification) {
	if v.Run == nil {
		fmt.Fprintf(w, "Report %s: NOT FOUND in the drill history: %s\n", v.Dir, peerText(v.Reason, 400))
		return
	}
	fmt.Fprintf(w, "Report %s: drill %s started %s (%s), as recorded in the drill history\n", v.Dir, peerText(v.Run.Drill, 80), v.Run.Started.UTC().Format(time.RFC3339), peerText(v.Run.Verdict, 10))
	for _, f := range v.Files {
		switch f.Status {
		case drills.FileOK:
			fmt.Fprintf(w, "  %s %-12s %s\n", check(true), f.Name, peerText(f.Recorded, 80))
		default:
			fmt.Fprintf(w, "  %s %-12s %s: %s (recorded %s", check(false), f.Name, strings.ToUpper(f.Status), f.Detail, peerText(f.Recorded, 80))
			if f.Actual != "" {
				fmt.Fprintf(w, ", now %s", f.Actual)
			}
			fmt.Fprintln(w, ")")
		}
	}
	if v.OK {
		fmt.Fprintln(w, "Verified: every report file is as the drill wrote it.")
	} else {
		fmt.Fprintf(w, "NOT VERIFIED: %s\n", peerText(v.Reason, 400))
	}
}

// margin is the time to spare under the RTO, or by how much it was missed: never a negative
// number for a pass.
func margin(e drills.HistoryEntry) string {
	if e.RecoverySeconds == nil {
		return "—"
	}
	d := e.RTOSeconds - *e.RecoverySeconds
	if d >= 0 {
		return fmt.Sprintf("%.2fs spare", d)
	}
	return fmt.Sprintf("%.2fs over", -d)
}

// cut shortens s to n runes for a table cell, marking the cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// wrap breaks s into lines of at most width runes at spaces (a longer word is cut).
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		for len([]rune(word)) > width {
			if line != "" {
				lines, line = append(lines, line), ""
			}
			r := []rune(word)
			lines, word = append(lines, string(r[:width])), string(r[width:])
		}
		switch {
		case line == "":
			line = word
		case len([]rune(line))+1+len([]rune(word)) <= width:
			line += " " + word
		default:
			lines, line = append(lines, line), word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// renderHistory is the trend table: the columns stay short (long names are cut); what failed is
// on lines of its own under the run, wrapped to width.
func renderHistory(w io.Writer, h []drills.HistoryEntry, width int) {
	if len(h) == 0 {
		fmt.Fprintln(w, "No drill has run yet.")
		return
	}
	type row struct {
		cells  []string
		failed []string
	}
	rows := []row{{cells: []string{"STARTED", "DRILL", "LOST", "VERDICT", "RECOVERY", "RTO", "MARGIN", "FAULTS DETECTED", "TREND"}}}
	var prev *float64
	for _, e := range h {
		rec, trend := "—", ""
		if e.RecoverySeconds != nil {
			rec = fmt.Sprintf("%.2fs", *e.RecoverySeconds)
			if prev != nil && *prev > 0 {
				trend = fmt.Sprintf("%+.0f%%", (*e.RecoverySeconds-*prev) / *prev * 100)
			}
			prev = e.RecoverySeconds
		}
		if e.Skipped != "" {
			rows = append(rows, row{cells: []string{e.Started.Format("2006-01-02 15:04:05"), cut(peerText(e.Drill, 200), 32), cut(peerText(e.Lost, 80), 20),
				drills.VerdictSkipped, "—", "—", "—", "—", ""}, failed: []string{"skipped: " + peerText(e.Skipped, 500)}})
			continue
		}
		r := row{cells: []string{e.Started.Format("2006-01-02 15:04:05"), cut(peerText(e.Drill, 200), 32), cut(peerText(e.Lost, 80), 20),
			cut(peerText(e.Verdict, 10), 7), rec, fmt.Sprintf("%gs", e.RTOSeconds), margin(e), fmt.Sprintf("%d/%d", e.Detected, e.Faults), trend}}
		for _, s := range e.StepsFailed {
			r.failed = append(r.failed, "step "+peerText(s, 80))
		}
		for _, x := range e.ExpectFailed {
			r.failed = append(r.failed, "expectation: "+peerText(x, 300))
		}
		rows = append(rows, r)
	}
	widths := make([]int, len(rows[0].cells))
	for _, r := range rows {
		for i, c := range r.cells {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	const indent = "    failed: "
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r.cells {
			b.WriteString(c)
			if i < len(r.cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		for i, l := range wrap(strings.Join(r.failed, "; "), max(width-len(indent), 30)) {
			lead := indent
			if i > 0 {
				lead = strings.Repeat(" ", len(indent))
			}
			fmt.Fprintf(w, "%s%s\n", lead, l)
		}
	}
	pass, skipped := 0, 0
	for _, e := range h {
		switch {
		case e.Skipped != "":
			skipped++
		case e.OK:
			pass++
		}
	}
	if skipped > 0 {
		fmt.Fprintf(w, "%d run(s): %d passed, %d failed, %d skipped by the calendar\n", len(h), pass, len(h)-pass-skipped, skipped)
		return
	}
	fmt.Fprintf(w, "%d run(s): %d passed, %d failed\n", len(h), pass, len(h)-pass)
}

func (a *app) drillCleanupCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "cleanup FILE [-o text|json]",
		Short: "Put back what a drill that died left behind: the router at its baseline, the faults, the candidates, the temp dir",
		Long: `A drill records in the fleet's state store (drills/active/) what it must undo before it changes
anything: the router's weights as it found them, a copy of every file it breaks, the
candidates it starts and its temp dir. Its teardown undoes all of it; when the drill process
died (kill -9, a crash, a lost machine) that record stays open and the next drill refuses to
start. cleanup undoes every open record of the drill file's fleet, as teardown would have:

  router     returned to the baseline by a ramped abort of the open failover run, only when
             the record lists that run as the drill's own; another operator's run is named
             as left behind, never undone
  candidates their process groups are stopped (only a group > 1 whose leader has the
             recorded start time and is in the drill's session)
  faults     every file the drill file names put back from its copy under the record's own
             key (checked against the manifest's SHA-256)
  temp dir   removed (only the one this host made: under the temp root, not a link, ours)

A record is untrusted input: a record for another fleet file, or any part of one that is not
provably the drill's, is refused and named, and nothing of it is touched.

Run it on the host the drill ran on (its candidates and temp dir are there). Each record is
closed with what was left behind. Exit codes: 0 nothing left behind; 1 something could not be
restored (listed); 3 a recorded drill still runs; 2 bad drill or fleet file.`,
		Example: `  lifeboat drill cleanup drills/lose-eu-west-1.yaml`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := a.checkOutput("text", "json"); err != nil {
				return err
			}
			r, err := a.drillRunner(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			cl := &drills.Cleaner{Fleet: r.Fleet, Manifest: r.Manifest, Drill: r.Drill, FleetDigest: r.FleetDigest.Digest, Open: a.opener(r.Fleet.State), Log: a.log}
			res, err := cl.Cleanup(ctx)
			if res == nil && err != nil {
				return err
			}
			// Launchers that find their own leftovers by label (kubernetes) keep no drill record.
			removed, lerr := drills.LauncherLeftovers(ctx, r.Fleet)
			if removed == nil {
				removed = []string{}
			}
			if a.output == "json" {
				if jerr := a.writeJSON(map[string]any{"drills": res, "launchers": removed}); jerr != nil {
					return jerr
				}
			} else {
				if len(res) > 0 || len(removed) == 0 {
					renderCleanup(a.stdout, res)
				}
				for _, l := range removed {
					fmt.Fprintf(a.stdout, "launcher leftovers: %s\n", l)
				}
			}
			switch {
			case errors.Is(err, drills.ErrDrillRunning):
				return err // exitTable: refused (3)
			case err != nil:
				return problem("%v", err)
			case lerr != nil:
				return problem("launcher leftovers: %v", lerr)
			}
			return nil
		},
	}
	return c
}

func renderCleanup(w io.Writer, res []drills.CleanupResult) {
	if len(res) == 0 {
		fmt.Fprintln(w, "No drill left anything behind: nothing to clean up.")
		return
	}
	for _, r := range res {
		fmt.Fprintf(w, "Drill %s (record %s, pid %d on %s, started %s):\n", r.Drill, r.ID, r.PID, r.Host, r.Started.Format(time.RFC3339))
		if r.Skipped != "" {
			fmt.Fprintf(w, "  not cleaned: %s\n", r.Skipped)
			continue
		}
		td := r.Teardown
		if r.Router != "" {
			fmt.Fprintf(w, "  router: %s\n", r.Router)
		}
		fmt.Fprintf(w, "  stopped: %s\n", orNone(td.Stopped))
		fmt.Fprintf(w, "  faults put back: %s\n", orNone(td.FaultsUndone))
		fmt.Fprintf(w, "  temp dir removed: %v, lock released: %v\n", td.TempRemoved, td.LockReleased)
		fmt.Fprintf(w, "  left behind: %s\n", orNone(td.Left))
	}
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "nothing"
	}
	return strings.Join(xs, "; ")
}

// opener opens store URLs for a drill: the fleet's state store private (openStateStore), the
// replicas as openStore.
func (a *app) opener(state string) func(context.Context, string) (providers.Store, error) {
	return func(ctx context.Context, u string) (providers.Store, error) {
		if u == state {
			return a.openStateStore(ctx, u)
		}
		return a.openStore(ctx, u)
	}
}
