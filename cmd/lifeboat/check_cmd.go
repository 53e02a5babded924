package main

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"lifeboat/fleet"
	"lifeboat/internal/base/shell"
	"lifeboat/manifest"
	"lifeboat/manifest/lint"
	"lifeboat/providers"
	"lifeboat/verify"
)

const checkLong = `check is what CI runs before every release:

  1. the manifest: built from --model (with --engine and --deploy) when given, else the fleet's
     model.manifest;
  2. lint it — against --model when given, else against the first region's replica (as a bundle);
  3. quick-verify every region's replica (metadata only: sizes and native checksums); with
     --deep, re-hash every file quick verification could not prove (UNVERIFIED: a store without
     native checksums — a local directory, an Azure blob without Content-MD5, an S3 multipart
     upload), so such a replica is proven OK or CORRUPT instead of passing unproven;
  4. with a trust: section in the fleet, the manifest's signature against the accepted keys
     (offline; a gap when trust.require and no accepted key signed it);
  5. report: -o junit has one suite for the lint (a case per rule) and one per region (a case per
     file), so a CI test view names the broken file and the region, and one for the signature.

The text output ends with one line that starts with PASS or FAIL (-o json: "verdict"; -o junit:
the line goes to stderr), whatever the outcome, bad input included.

Exit codes: 0 no gap; 1 a lint error, a replica with a missing, short, mismatched or corrupt
file (with --strict also warnings and UNVERIFIED files), or a manifest no accepted key signed
(trust.require); 2 bad input; 4 a store stayed
unreachable.`

const checkExample = `  lifeboat check --fleet fleet.yaml -o junit > lifeboat-check.xml
  lifeboat check --fleet fleet.yaml --deep
  lifeboat check --fleet fleet.yaml --model ./llama --engine engine.yaml --deploy deploy/`

// checkInput is what check was asked to do (its flags).
type checkInput struct {
	fleetFile, model, engine string
	deploy                   []string
	strict, deep             bool
	jobs                     int
}

// checkCmd is the release gate: manifest (built or loaded), lint, quick verify of every
// region's replica, JUnit out, non-zero exit on any gap.
func (a *app) checkCmd() *cobra.Command {
	var in checkInput
	c := &cobra.Command{
		Use:     "check --fleet FILE [--model DIR [--engine FILE] [--deploy DIR]] [--deep] [--strict] [-o text|json|junit]",
		Short:   "The release gate for CI: lint the DR manifest and quick-verify every region's replica",
		Long:    checkLong,
		Example: checkExample,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.runCheck(cmd.Context(), in) },
	}
	f := c.Flags()
	f.StringVar(&in.fleetFile, "fleet", "", "the fleet file (required): its manifest and every region's replica")
	f.StringVar(&in.model, "model", "", "build the manifest from this model repository instead of loading model.manifest")
	f.StringVar(&in.engine, "engine", "", "with --model: the vLLM engine config YAML")
	f.StringSliceVar(&in.deploy, "deploy", nil, "with --model: deployment manifests (files or directories)")
	f.BoolVar(&in.strict, "strict", false, "fail on lint warnings and UNVERIFIED files too")
	f.BoolVar(&in.deep, "deep", false, "re-hash every file quick verification could not prove (stores without native checksums)")
	f.IntVarP(&in.jobs, "jobs", "j", 0, "requests in flight across all replicas")
	_ = c.MarkFlagFilename("fleet", "yaml", "yml")
	return c
}

// checkSummary is what a check found, for its verdict line; nil parts were not reached.
type checkSummary struct {
	lint   *lint.Report
	verify *verify.Report
	trust  *sigCheck
}

// runCheck runs the check and ends its output with the verdict line, whatever the outcome.
func (a *app) runCheck(ctx context.Context, in checkInput) error {
	var sum checkSummary
	err := a.check(ctx, in, &sum)
	if err != nil {
		err = withFixes(demoCloudsHint(in.fleetFile, err), sum.verify)
	}
	a.checkVerdict(in, &sum, err)
	return err
}

// check loads the fleet and its manifest, lints the manifest, quick-verifies every region's
// replica (then, with --deep, re-hashes what that could not prove), reports in the -o format
// and returns the error that sets the exit status.
func (a *app) check(ctx context.Context, in checkInput, sum *checkSummary) error {
	if err := a.checkOutput("text", "json", "junit"); err != nil {
		return err
	}
	if in.fleetFile == "" {
		return usageErr("check needs --fleet FILE")
	}
	fl, err := fleet.Read(in.fleetFile)
	if err != nil {
		return usageErr("%v", err)
	}
	m, err := a.checkManifest(ctx, fl, in)
	if err != nil {
		return err
	}
	names, urls := []string{}, []string{}
	for _, n := range fl.RegionNames() {
		if r := fl.Regions[n]; r.Replica != "" {
			names, urls = append(names, n), append(urls, r.Replica)
		}
	}
	if len(urls) == 0 {
		return usageErr("%s: no region has a replica to verify", in.fleetFile)
	}
	dirs := lint.DirSource{Model: in.model}
	if in.model == "" {
		dirs = lint.DirSource{Bundle: urls[0]}
	}
	src, closeSrc, err := lint.OpenSource(ctx, m, dirs, a.openStore)
	if err != nil {
		return err
	}
	lrep := lint.Run(ctx, m, src, a.log)
	closeSrc()
	sum.lint = lrep
	vrep, err := a.checkReplicas(ctx, m, names, urls, in)
	if err != nil {
		return err
	}
	vrep.Manifest = fl.Model.Manifest
	addFixes(vrep, fl.Model.Manifest, urls)
	sum.verify = vrep
	sig, err := a.checkTrust(ctx, fl, in)
	if err != nil {
		return err
	}
	sum.trust = sig
	lintGap := lrep.Errors > 0 || (in.strict && lrep.Warnings > 0)
	sigGap := sig != nil && !sig.Valid && fl.Trust.Require
	verr := vrep.Err(in.strict)
	if err := a.writeCheck(in, fl, lrep, vrep, sig, !lintGap && !sigGap && verr == nil); err != nil {
		return err
	}
	var gaps []string
	if lintGap {
		gaps = append(gaps, fmt.Sprintf("lint: %d error(s), %d warning(s)", lrep.Errors, lrep.Warnings))
	}
	if sigGap {
		gaps = append(gaps, fmt.Sprintf("trust: no valid signature by an accepted key (signatures found: %s; see why: lifeboat manifest verify-sig --fleet %s)", sig.Claimed(), shell.Quote(in.fleetFile)))
	}
	if verr != nil {
		gaps = append(gaps, verr.Error())
	}
	if len(gaps) > 0 && (lintGap || sigGap || exitCode(verr) == exitProblem) {
		return problem("check %s: %s", in.fleetFile, strings.Join(gaps, "; "))
	}
	return verr
}

// checkVerdict writes the one line a person or a CI log looks for: PASS or FAIL, the exit
// status, and what decided it. Text: last on stdout; junit: on stderr (stdout is the XML);
// json: the report's "verdict" field says it, and an error is the JSON error object.
func (a *app) checkVerdict(in checkInput, sum *checkSummary, err error) {
	w := a.stdout
	switch a.output {
	case "json":
		return
	case "junit":
		if a.quiet {
			return // -q: the error on stderr and the exit code say it
		}
		w = a.stderr
	}
	name := orDash(in.fleetFile)
	var parts []string
	if sum.lint != nil {
		parts = append(parts, fmt.Sprintf("lint %d error(s), %d warning(s)", sum.lint.Errors, sum.lint.Warnings))
	}
	if sum.verify != nil {
		parts = append(parts, "replicas "+replicaCounts(sum.verify))
		if n := countReplicas(sum.verify, verify.ReplicaUnverified); n > 0 && err == nil {
			parts = append(parts, fmt.Sprintf("%d replica(s) not proven: check --deep re-hashes what the store has no checksum for", n))
		}
	}
	if t := sum.trust; t != nil {
		if t.Valid {
			parts = append(parts, "manifest signed by accepted key "+t.KeyID)
		} else {
			parts = append(parts, "manifest not signed by an accepted key")
		}
	}
	if err == nil {
		fmt.Fprintf(w, "PASS: check %s: %s\n", name, strings.Join(parts, "; "))
		return
	}
	if sum.verify == nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		parts = append(parts, "did not complete: "+providers.Sanitize(msg, 240))
	}
	fmt.Fprintf(w, "FAIL (exit %d): check %s: %s\n", exitCode(err), name, strings.Join(parts, "; "))
}

// replicaCounts is "2 OK, 1 FAILED": the replicas by status, in the report's order of gravity.
func replicaCounts(rep *verify.Report) string {
	var parts []string
	for _, s := range []verify.ReplicaStatus{verify.ReplicaOK, verify.ReplicaFailed, verify.ReplicaUnverified, verify.ReplicaNotFound,
		verify.ReplicaDenied, verify.ReplicaMisconfigured, verify.ReplicaError, verify.ReplicaUnreachable} {
		if n := countReplicas(rep, s); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	return strings.Join(parts, ", ")
}

func countReplicas(rep *verify.Report, s verify.ReplicaStatus) int {
	n := 0
	for _, r := range rep.Replicas {
		if r.Status == s {
			n++
		}
	}
	return n
}

// checkManifest builds the manifest from --model when given, else reads the fleet's.
func (a *app) checkManifest(ctx context.Context, fl *fleet.Fleet, in checkInput) (*manifest.Manifest, error) {
	if in.model == "" {
		return a.readManifest(ctx, fl.Model.Manifest)
	}
	fmt.Fprintf(a.stderr, "building the manifest of %s\n", in.model)
	m, err := manifest.Build(ctx, manifest.BuildOptions{ModelDir: in.model, EngineFile: in.engine, DeployPaths: in.deploy, Name: fl.Model.Name})
	if err != nil {
		return nil, usageErr("--model %s: %v", in.model, err)
	}
	return m, nil
}

// checkReplicas quick-verifies the replicas, each result named by its region; with --deep, each
// replica's UNVERIFIED files are then re-hashed (verify.Settle).
func (a *app) checkReplicas(ctx context.Context, m *manifest.Manifest, names, urls []string, in checkInput) (*verify.Report, error) {
	stores, err := a.openStores(ctx, urls)
	defer func() {
		for _, s := range stores {
			s.Close()
		}
	}()
	if err != nil {
		return nil, err
	}
	o := verify.Options{Jobs: in.jobs}
	vrep := verify.Replicas(ctx, m, stores, verify.ModeQuick, o)
	if in.deep {
		vrep.Mode = checkDeepMode
		var wg sync.WaitGroup
		for i := range vrep.Replicas {
			wg.Go(func() { vrep.Replicas[i] = verify.Settle(ctx, m, stores[i], vrep.Replicas[i], o) })
		}
		wg.Wait()
	}
	for i := range vrep.Replicas {
		vrep.Replicas[i].Region, vrep.Replicas[i].URL = names[i], providers.Redact(vrep.Replicas[i].URL)
	}
	return vrep, nil
}

// checkDeepMode is the report's mode with --deep: quick, then deep for what quick left unproven.
const checkDeepMode = "quick+deep"

// writeCheck reports the lint and the verification in the -o format: JUnit has the lint's suite,
// then one per region.
func (a *app) writeCheck(in checkInput, fl *fleet.Fleet, lrep *lint.Report, vrep *verify.Report, sig *sigCheck, ok bool) error {
	switch a.output {
	case "json":
		verdict := "FAIL"
		if ok {
			verdict = "PASS"
		}
		doc := map[string]any{"fleet": in.fleetFile, "lint": lrep, "verify": vrep, "ok": ok, "verdict": verdict}
		if sig != nil {
			doc["trust"] = sig
		}
		return a.writeJSON(doc)
	case "junit":
		ls := lintSuites(fl.Model.Name, lrep, in.strict)
		ls.Name = "lifeboat check " + in.fleetFile
		ls.Suites = append(ls.Suites, verifySuites(vrep, in.strict).Suites...)
		if sig != nil {
			ls.Suites = append(ls.Suites, signatureSuite(sig, fl.Trust.Require))
		}
		return a.writeJUnit(ls)
	}
	if sig != nil {
		renderCheckSig(a, sig, fl.Trust.Require)
	}
	fmt.Fprintf(a.stdout, "Lint: %d error(s), %d warning(s)\n", lrep.Errors, lrep.Warnings)
	for _, f := range lrep.Findings {
		if f.Severity == lint.Error || in.strict {
			fmt.Fprintf(a.stdout, "  %s %s %s: %s\n", f.Severity, f.Rule, orDash(f.Path), f.Message)
		}
	}
	return renderVerify(a.stdout, vrep)
}
