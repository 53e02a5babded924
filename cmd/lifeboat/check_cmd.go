package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"lifeboat/failover"
	"lifeboat/manifest"
	"lifeboat/manifest/lint"
	"lifeboat/providers"
	"lifeboat/verify"
)

const checkLong = `check is what CI runs before every release:

  1. the manifest: built from --model (with --engine and --deploy) when given, else the fleet's
     model.manifest;
  2. lint it — against --model when given, else against the first region's replica (as a bundle);
  3. quick-verify every region's replica (metadata only: sizes and native checksums);
  4. report: -o junit has one suite for the lint (a case per rule) and one per region (a case per
     file), so a CI test view names the broken file and the region.

Exit codes: 0 no gap; 1 a lint error or a replica with a missing, short or mismatched file (with
--strict also warnings and UNVERIFIED files); 2 bad input; 4 a store stayed unreachable.`

const checkExample = `  lifeboat check --fleet fleet.yaml -o junit > lifeboat-check.xml
  lifeboat check --fleet fleet.yaml --model ./llama --engine engine.yaml --deploy deploy/`

// checkInput is what check was asked to do (its flags).
type checkInput struct {
	fleetFile, model, engine string
	deploy                   []string
	strict                   bool
	jobs                     int
}

// checkCmd is the release gate: manifest (built or loaded), lint, quick verify of every
// region's replica, JUnit out, non-zero exit on any gap.
func (a *app) checkCmd() *cobra.Command {
	var in checkInput
	c := &cobra.Command{
		Use:     "check --fleet FILE [--model DIR [--engine FILE] [--deploy DIR]] [--strict] [-o text|json|junit]",
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
	f.IntVarP(&in.jobs, "jobs", "j", 0, "requests in flight across all replicas")
	_ = c.MarkFlagFilename("fleet", "yaml", "yml")
	return c
}

// runCheck loads the fleet and its manifest, lints the manifest, quick-verifies every region's
// replica, reports in the -o format and exits as the help says.
func (a *app) runCheck(ctx context.Context, in checkInput) error {
	if err := a.checkOutput("text", "json", "junit"); err != nil {
		return err
	}
	if in.fleetFile == "" {
		return usageErr("check needs --fleet FILE")
	}
	fl, err := failover.ReadFleet(in.fleetFile)
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
	vrep, err := a.checkReplicas(ctx, m, names, urls, in.jobs)
	if err != nil {
		return err
	}
	vrep.Manifest = fl.Model.Manifest
	lintGap := lrep.Errors > 0 || (in.strict && lrep.Warnings > 0)
	verr := vrep.Err(in.strict)
	if err := a.writeCheck(in, fl, lrep, vrep, !lintGap && verr == nil); err != nil {
		return err
	}
	var gaps []string
	if lintGap {
		gaps = append(gaps, fmt.Sprintf("lint: %d error(s), %d warning(s)", lrep.Errors, lrep.Warnings))
	}
	if verr != nil {
		gaps = append(gaps, verr.Error())
	}
	if len(gaps) > 0 && (lintGap || exitCode(verr) == exitProblem) {
		return problem("check %s: %s", in.fleetFile, strings.Join(gaps, "; "))
	}
	return verr
}

// checkManifest builds the manifest from --model when given, else reads the fleet's.
func (a *app) checkManifest(ctx context.Context, fl *failover.Fleet, in checkInput) (*manifest.Manifest, error) {
	if in.model == "" {
		return a.readManifest(fl.Model.Manifest)
	}
	fmt.Fprintf(a.stderr, "building the manifest of %s\n", in.model)
	m, err := manifest.Build(ctx, manifest.BuildOptions{ModelDir: in.model, EngineFile: in.engine, DeployPaths: in.deploy, Name: fl.Model.Name})
	if err != nil {
		return nil, usageErr("--model %s: %v", in.model, err)
	}
	return m, nil
}

// checkReplicas quick-verifies the replicas, each result named by its region.
func (a *app) checkReplicas(ctx context.Context, m *manifest.Manifest, names, urls []string, jobs int) (*verify.Report, error) {
	stores, err := a.openStores(ctx, urls)
	defer func() {
		for _, s := range stores {
			s.Close()
		}
	}()
	if err != nil {
		return nil, err
	}
	vrep := verify.Replicas(ctx, m, stores, verify.ModeQuick, verify.Options{Jobs: jobs})
	for i := range vrep.Replicas {
		vrep.Replicas[i].URL = names[i] + " " + providers.Redact(vrep.Replicas[i].URL)
	}
	return vrep, nil
}

// writeCheck reports the lint and the verification in the -o format: JUnit has the lint's suite,
// then one per region.
func (a *app) writeCheck(in checkInput, fl *failover.Fleet, lrep *lint.Report, vrep *verify.Report, ok bool) error {
	switch a.output {
	case "json":
		return a.writeJSON(map[string]any{"fleet": in.fleetFile, "lint": lrep, "verify": vrep, "ok": ok})
	case "junit":
		ls := lintSuites(fl.Model.Name, lrep, in.strict)
		ls.Name = "lifeboat check " + in.fleetFile
		ls.Suites = append(ls.Suites, verifySuites(vrep, in.strict).Suites...)
		return a.writeJUnit(ls)
	}
	fmt.Fprintf(a.stdout, "Lint: %d error(s), %d warning(s)\n", lrep.Errors, lrep.Warnings)
	for _, f := range lrep.Findings {
		if f.Severity == lint.Error || in.strict {
			fmt.Fprintf(a.stdout, "  %s %s %s: %s\n", f.Severity, f.Rule, orDash(f.Path), f.Message)
		}
	}
	return renderVerify(a.stdout, vrep)
}
