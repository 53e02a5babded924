package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"lifeboat/fleet"
	"lifeboat/internal/base/shell"
	"lifeboat/verify/replicate"
	"lifeboat/verify/warm"
)

func (a *app) bootCmd() *cobra.Command {
	var (
		fleetFile, region, workdir string
		keep                       bool
		po                         warm.ProbeOptions
		jobs                       int
	)
	c := &cobra.Command{
		Use:   "boot --fleet FILE --region NAME [--keep] [--workdir DIR] [--ttft-budget 2s] [--timeout 10m] [-o text|json]",
		Short: "Restore a region's replica, boot it with the region's launcher and judge whether it is warm",
		Long: `Boot proves that a region's replica does not only verify but starts and serves:

  1. restore the region's replica (regions.NAME.replica in the fleet file) into --workdir, checking
     every byte against the manifest (model.manifest) as it streams, as 'lifeboat restore' does.
     A working directory restored and proven by an earlier boot, whose files are unchanged since
     (same size, modification and change time, inode), is not restored again; the default
     --workdir is private to the caller, and one another user owns or can write to is refused;
  2. launch it with the region's launcher (regions.NAME.launcher): kind exec runs the command
     template on this host — {{.ModelDir}} is WORKDIR/bundle/model, {{.EngineConfig}} the restored
     engine config, {{.Port}} a free port, {{.Host}} 127.0.0.1 — with the launcher's env, its
     output in WORKDIR/replica.log; a command starting with "lifeboat" runs this binary. Kind
     endpoint probes a replica already running at launcher.url (or the region's endpoint), and
     restores nothing;
  3. probe it as 'lifeboat probe' does: the served names are the engine config's
     served-model-name(s), the LoRA adapters its lora-modules. --timeout is the total time of
     this step, from launch to the last check (the restore before it is not counted);
  4. report the verdict and timings (restore_s, launch_s, listen_s, healthy_s, ttft_s,
     tokens_per_s, warm_s) and stop the replica and its whole process group, unless --keep
     (kept only when WARM; Ctrl-C stops it).

To boot a real vLLM on a GPU host, set the region's launcher to
  {kind: exec, command: "vllm serve {{.ModelDir}} --config {{.EngineConfig}} --host {{.Host}} --port {{.Port}}"}

Exit codes: 0 WARM (and the restore, if one ran, complete); 1 not warm, or files could not be
restored; 2 bad input (fleet file, region, manifest, launcher); 4 the replica's store stayed
unreachable.`,
		Example: `  lifeboat boot --fleet fleet.yaml --region eu-west-1
  lifeboat boot --fleet fleet.yaml --region us-east-1 --workdir /srv/boot/use1 --ttft-budget 5s -o json
  lifeboat boot --fleet fleet.yaml --region us-east-1 --keep    # leave it running (until Ctrl-C)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := a.checkOutput("text", "json"); err != nil {
				return err
			}
			switch {
			case fleetFile == "" || region == "":
				return usageErr("boot needs --fleet FILE and --region NAME (see --help)")
			case jobs < 0:
				return usageErr("-j %d: must be at least 1", jobs)
			}
			if err := checkProbeOptions(po); err != nil {
				return err
			}
			fl, err := fleet.Read(fleetFile)
			if errors.Is(err, fleet.ErrInvalidFleet) {
				return usageErr("%v", err)
			} else if err != nil {
				return usageErr("--fleet: %v", err)
			}
			o, err := warm.FleetBootOptions(fl, region, fleet.LaunchOptions{Command: selfCommand, Log: a.log})
			if err != nil {
				return usageErr("%v", err)
			}
			o.Keep, o.Probe, o.Restore = keep, a.probeHooks(po, "boot"), replicate.Options{Jobs: jobs, Log: a.log}
			o.Probe.Auth = fl.ProbeAuth(region) // the fleet names where the replica's bearer token is
			closeSrc, err := a.prepareBootRestore(ctx, fl, region, workdir, &o)
			if err != nil {
				return err
			}
			defer closeSrc()
			res, err := a.runBoot(ctx, fl, region, o)
			if err != nil {
				return err
			}
			return a.finishBoot(ctx, fl, region, res)
		},
	}
	f := c.Flags()
	f.StringVar(&fleetFile, "fleet", "", "the fleet file (required)")
	f.StringVar(&region, "region", "", "the region whose replica to boot (required)")
	f.BoolVar(&keep, "keep", false, "leave a warm replica running until interrupted")
	f.StringVar(&workdir, "workdir", "", "where to restore and keep the replica's log (default: a private per-user ~/.cache/lifeboat/boot/MODEL/REGION, reused across runs; refused if another user owns it or can write to it)")
	addProbeFlags(f, &po, 0, "the default 0 expects the empty queue of a freshly booted replica")
	f.IntVarP(&jobs, "jobs", "j", replicate.DefaultJobs, "files restored at once")
	_ = c.MarkFlagFilename("fleet", "yaml", "yml")
	_ = c.MarkFlagDirname("workdir")
	return c
}

// prepareBootRestore reads the manifest and prepares the working directory for an exec launcher
// and opens the replica's store unless an earlier boot's restore is still proven. The returned
// func closes the store.
func (a *app) prepareBootRestore(ctx context.Context, fl *fleet.Fleet, region, workdir string, o *warm.BootOptions) (func(), error) {
	noop := func() {}
	// checked here, before the working directory is touched; warm.Boot does not check again
	trusted, err := a.enforceTrust(ctx, fl.Model.Manifest, fleetTrust(fl, fl.File), "boot")
	if err != nil {
		return noop, err
	}
	o.Trusted = trusted
	if o.NoRestore {
		return noop, nil
	}
	if o.Manifest, err = a.parseTrusted(ctx, fl.Model.Manifest, trusted); err != nil {
		return noop, err
	}
	if workdir == "" {
		if workdir, err = warm.DefaultWorkdir(fl.Model.Name, region); err != nil {
			return noop, usageErr("%v", err)
		}
	}
	o.Workdir = workdir
	if err := warm.PrepareWorkdir(workdir); err != nil {
		return noop, usageErr("--workdir %s: %v", workdir, err)
	}
	if warm.RestoredEarlier(workdir, o.LocalManifest()) {
		return noop, nil
	}
	src, err := a.openStore(ctx, fl.Regions[region].Replica)
	if err != nil {
		return noop, err
	}
	o.From = src
	return func() { src.Close() }, nil
}

// runBoot runs warm.Boot with a progress bar over the restore.
func (a *app) runBoot(ctx context.Context, fl *fleet.Fleet, region string, o warm.BootOptions) (*warm.BootResult, error) {
	if o.From != nil {
		bar := a.newProgress("restoring")
		defer bar.Done()
		o.Restore.Progress, o.Restore.Total = bar.Add, bar.SetTotal
	}
	if !a.quiet {
		fmt.Fprintf(a.stderr, "booting %s in %s\n", fl.Model.Name, region)
	}
	res, err := warm.Boot(ctx, o)
	if errors.Is(err, warm.ErrBootInput) {
		return res, withCode(exitUsage, err)
	}
	return res, err // exitCode: unreachable 4, interrupted 130, the rest is bad input 2
}

// finishBoot reports the result, keeps a warm replica running until Ctrl-C with --keep, and
// says whether it was warm.
func (a *app) finishBoot(ctx context.Context, fl *fleet.Fleet, region string, res *warm.BootResult) error {
	if err := a.reportBoot(fl, region, res); err != nil {
		return err
	}
	if res.Kept {
		a.flushJSON(exitOK, "")
		fmt.Fprintf(a.stderr, "replica kept running at %s; Ctrl-C stops it\n", res.URL)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = res.Instance.Stop(sctx)
	}
	if !res.OK {
		return problem("%s in %s is not warm: %s", fl.Model.Name, region, res.Verdict)
	}
	return nil
}

// selfCommand makes a command template that starts with the word "lifeboat" run this very
// binary, so that the demo and tests need no lifeboat on PATH.
func selfCommand(command string) string {
	trimmed := strings.TrimLeft(command, " \t")
	rest, ok := strings.CutPrefix(trimmed, "lifeboat")
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return command
	}
	exe, err := os.Executable()
	if err != nil {
		return command
	}
	return shell.Quote(exe) + rest
}

func (a *app) reportBoot(fl *fleet.Fleet, region string, res *warm.BootResult) error {
	if a.output == "json" {
		v := struct {
			Fleet  string `json:"fleet"`
			Model  string `json:"model"`
			Region string `json:"region"`
			*warm.BootResult
		}{fl.File, fl.Model.Name, region, res}
		return a.writeJSON(v)
	}
	w := a.stdout
	fmt.Fprintf(w, "Boot %s in %s\n", fl.Model.Name, region)
	switch {
	case res.RestoreSkipped != "":
		fmt.Fprintf(w, "restore: skipped — %s\n", res.RestoreSkipped)
	case res.Restore != nil:
		rp := res.Restore
		fmt.Fprintf(w, "restore: %s — %d copied (%s), %d already intact, %d failed → %s\n",
			rp.Status, rp.Copied, humanBytes(rp.Bytes), rp.AlreadyOK+rp.RereadOK, rp.Failed, rp.Dir)
		for _, c := range rp.Files {
			if c.Outcome == replicate.OutcomeFailed {
				fmt.Fprintf(w, "  FAILED %s: %s\n", c.Path, c.Error)
			}
		}
	}
	if len(res.Models) > 0 {
		fmt.Fprintf(w, "expected: model %s", strings.Join(res.Models, ", "))
		if len(res.LoRAs) > 0 {
			fmt.Fprintf(w, "; LoRA %s", strings.Join(res.LoRAs, ", "))
		}
		fmt.Fprintln(w)
	}
	if res.URL != "" {
		fmt.Fprintf(w, "replica: %s", res.URL)
		if res.LogPath != "" {
			fmt.Fprintf(w, " (log %s)", res.LogPath)
		}
		fmt.Fprintln(w)
	}
	if p := res.Probe; p != nil {
		for _, c := range p.Checks {
			mark := "ok  "
			switch {
			case c.Skipped:
				mark = "skip"
			case !c.OK:
				mark = "FAIL"
			}
			fmt.Fprintf(w, "  %s %-22s %s\n", mark, c.Name, c.Detail)
		}
		if p.LogTail != "" && !res.OK {
			fmt.Fprintln(w, "replica log (tail):")
			for _, l := range strings.Split(p.LogTail, "\n") {
				fmt.Fprintf(w, "  | %s\n", l)
			}
		}
	}
	t := res.Timings
	var parts []string
	for _, x := range []struct {
		name string
		v    *float64
		unit string
	}{{"restore", t.RestoreS, "s"}, {"launch", t.LaunchS, "s"}, {"listen", t.ListenS, "s"}, {"healthy", t.HealthyS, "s"},
		{"ttft", t.TTFTS, "s"}, {"tokens/s", t.TokensPerS, ""}, {"warm", t.WarmS, "s"}, {"total", t.TotalS, "s"}} {
		if x.v != nil {
			parts = append(parts, fmt.Sprintf("%s %.3g%s", x.name, *x.v, x.unit))
		}
	}
	fmt.Fprintf(w, "%s: %s\n", res.Verdict, res.Reason)
	if len(parts) > 0 {
		fmt.Fprintf(w, "timings: %s\n", strings.Join(parts, ", "))
	}
	return nil
}
