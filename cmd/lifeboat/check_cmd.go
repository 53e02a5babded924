package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"lifeboat/failover"
	"lifeboat/manifest"
	"lifeboat/manifest/lint"
	"lifeboat/providers"
	"lifeboat/verify"
)

// checkCmd is the release gate: manifest (built or loaded), lint, quick verify of every
// region's replica, JUnit out, non-zero exit on any gap.
func (a *app) checkCmd() *cobra.Command {
	var (
		fleetFile, model, engine string
		deploy                   []string
		strict                   bool
		jobs                     int
	)
	c := &cobra.Command{
		Use:   "check --fleet FILE [--model DIR [--engine FILE] [--deploy DIR]] [--strict] [-o text|json|junit]",
		Short: "The release gate for CI: lint the DR manifest and quick-verify every region's replica",
		Long: `check is what CI runs before every release:

  1. the manifest: built from --model (with --engine and --deploy) when given, else the fleet's
     model.manifest;
  2. lint it — against --model when given, else against the first region's replica (as a bundle);
  3. quick-verify every region's replica (metadata only: sizes and native checksums);
  4. report: -o junit has one suite for the lint (a case per rule) and one per region (a case per
     file), so a CI test view names the broken file and the region.

Exit codes: 0 no gap; 1 a lint error or a replica with a missing, short or mismatched file (with
--strict also warnings and UNVERIFIED files); 2 bad input; 4 a store stayed unreachable.`,
		Example: `  lifeboat check --fleet fleet.yaml -o junit > lifeboat-check.xml
  lifeboat check --fleet fleet.yaml --model ./llama --engine engine.yaml --deploy deploy/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := a.checkOutput("text", "json", "junit"); err != nil {
				return err
			}
			if fleetFile == "" {
				return usageErr("check needs --fleet FILE")
			}
			fl, err := failover.ReadFleet(fleetFile)
			if err != nil {
				return usageErr("%v", err)
			}
			var m *manifest.Manifest
			if model != "" {
				fmt.Fprintf(a.stderr, "building the manifest of %s\n", model)
				m, err = manifest.Build(ctx, manifest.BuildOptions{ModelDir: model, EngineFile: engine, DeployPaths: deploy, Name: fl.Model.Name})
				if err != nil {
					return usageErr("--model %s: %v", model, err)
				}
			} else if m, err = a.readManifest(fl.Model.Manifest); err != nil {
				return err
			}
			names := []string{}
			urls := []string{}
			for _, n := range fl.RegionNames() {
				if r := fl.Regions[n]; r.Replica != "" {
					names, urls = append(names, n), append(urls, r.Replica)
				}
			}
			if len(urls) == 0 {
				return usageErr("%s: no region has a replica to verify", fleetFile)
			}
			dirs := lint.DirSource{Model: model}
			if model == "" {
				dirs = lint.DirSource{Bundle: urls[0]}
			}
			src, closeSrc, err := lint.OpenSource(ctx, m, dirs, a.openStore)
			if err != nil {
				return err
			}
			lrep := lint.Run(ctx, m, src, a.log)
			closeSrc()
			stores, err := a.openStores(ctx, urls)
			defer func() {
				for _, s := range stores {
					s.Close()
				}
			}()
			if err != nil {
				return err
			}
			vrep := verify.Replicas(ctx, m, stores, verify.ModeQuick, verify.Options{Jobs: jobs})
			vrep.Manifest = fl.Model.Manifest
			for i := range vrep.Replicas {
				vrep.Replicas[i].URL = names[i] + " " + providers.Redact(vrep.Replicas[i].URL)
			}
			lintGap := lrep.Errors > 0 || (strict && lrep.Warnings > 0)
			verr := vrep.Err(strict)
			switch a.output {
			case "json":
				err = a.writeJSON(map[string]any{"fleet": fleetFile, "lint": lrep, "verify": vrep, "ok": !lintGap && verr == nil})
			case "junit":
				ls := lintSuites(fl.Model.Name, lrep, strict)
				vs := verifySuites(vrep, strict)
				ls.Name = "lifeboat check " + fleetFile
				ls.Suites = append(ls.Suites, vs.Suites...)
				err = a.writeJUnit(ls)
			default:
				fmt.Fprintf(a.stdout, "Lint: %d error(s), %d warning(s)\n", lrep.Errors, lrep.Warnings)
				for _, f := range lrep.Findings {
					if f.Severity == lint.Error || strict {
						fmt.Fprintf(a.stdout, "  %s %s %s: %s\n", f.Severity, f.Rule, orDash(f.Path), f.Message)
					}
				}
				err = renderVerify(a.stdout, vrep)
			}
			if err != nil {
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
				return problem("check %s: %s", fleetFile, strings.Join(gaps, "; "))
			}
			return verr
		},
	}
	f := c.Flags()
	f.StringVar(&fleetFile, "fleet", "", "the fleet file (required): its manifest and every region's replica")
	f.StringVar(&model, "model", "", "build the manifest from this model repository instead of loading model.manifest")
	f.StringVar(&engine, "engine", "", "with --model: the vLLM engine config YAML")
	f.StringSliceVar(&deploy, "deploy", nil, "with --model: deployment manifests (files or directories)")
	f.BoolVar(&strict, "strict", false, "fail on lint warnings and UNVERIFIED files too")
	f.IntVarP(&jobs, "jobs", "j", 0, "requests in flight across all replicas")
	_ = c.MarkFlagFilename("fleet", "yaml", "yml")
	return c
}
