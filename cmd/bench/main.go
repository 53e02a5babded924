package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

type config struct {
	lifeboat   string
	dir        string
	size       int64
	shards     int
	runs       int
	quickFiles int
	quickRuns  int
	deepRuns   int
	rclone     string
	rclonePkg  string
	goTool     string
	sections   string
	// section 10
	registrySize int64
	registryRuns int
}

func main() {
	var c config
	flag.StringVar(&c.lifeboat, "lifeboat", "bin/lifeboat", "the lifeboat binary under test")
	flag.StringVar(&c.dir, "dir", ".bench", "where the benchmark data is generated (kept between runs)")
	flag.Int64Var(&c.size, "size", 2<<30, "total weight bytes of the generated repository (also the deep-verify replica)")
	flag.IntVar(&c.shards, "shards", 4, "safetensors shards of that repository")
	flag.IntVar(&c.runs, "runs", 3, "timed runs per tool for manifest build (the median is reported)")
	flag.IntVar(&c.quickFiles, "quick-files", 200, "files in the quick-verify bundle")
	flag.IntVar(&c.quickRuns, "quick-runs", 5, "timed runs per tool for quick verify (the median is reported)")
	flag.IntVar(&c.deepRuns, "deep-runs", 3, "timed runs per tool for deep verify (the median is reported)")
	flag.StringVar(&c.rclone, "rclone", "bin/rclone", "rclone for the comparison; built with -rclone-pkg when missing")
	flag.StringVar(&c.rclonePkg, "rclone-pkg", "github.com/rclone/rclone@v1.71.2", "what `go install` builds when -rclone is missing")
	flag.StringVar(&c.goTool, "go", "go", "the go command")
	flag.StringVar(&c.sections, "sections", "all", "all, failover (section 7 alone), enginesim (section 8 alone), boot (section 9 alone), registry (section 10 alone), deep (set-up, section 3 and its memory) or quick (sections 2, 5, 6)")
	flag.Int64Var(&c.registrySize, "registry-size", 256<<20, "weight bytes of the bundle pushed and pulled in section 10 (registry vs oras)")
	flag.IntVar(&c.registryRuns, "registry-runs", 3, "runs per tool in section 10, each to a fresh repository (the median is reported)")
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, c)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	start := time.Now()
	var err error
	if c.dir, err = filepath.Abs(c.dir); err != nil {
		return err
	}
	if c.lifeboat, err = filepath.Abs(c.lifeboat); err != nil {
		return err
	}
	if c.rclone, err = filepath.Abs(c.rclone); err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	if c.sections == "failover" {
		fmt.Printf("Lifeboat bench — %d CPUs (%s/%s); load average (1 min) %s\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, loadavg())
		return failoverSection(ctx, c)
	}
	if c.sections == "enginesim" {
		fmt.Printf("Lifeboat bench — %d CPUs (%s/%s); load average (1 min) %s\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, loadavg())
		return engineSimSection(ctx, c)
	}
	if c.sections == "boot" {
		fmt.Printf("Lifeboat bench — %d CPUs (%s/%s); load average (1 min) %s\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, loadavg())
		return bootSection(ctx, c)
	}
	if c.sections == "registry" {
		fmt.Printf("Lifeboat bench — %d CPUs (%s/%s); load average (1 min) %s\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, loadavg())
		if err := registrySection(ctx, c); err != nil {
			return err
		}
		fmt.Printf("load average (1 min) as the section ends: %s\n", loadavg())
		return nil
	}

	if err := buildShim(ctx, c.goTool, c.dir); err != nil {
		return err
	}
	// rclone first: its build is the long pole, and it runs while everything untimed is prepared.
	rc := startRcloneInstall(c.goTool, c.rclonePkg, c.rclone, filepath.Join(c.dir, "rclone-install.log"))
	defer rc.stop()

	// Untimed set-up: the ≥ 2 GB repository, its manifest, the emulators, the replicas.
	var repo *repo
	if c.sections != "quick" {
		if repo, err = prepareRepo(ctx, c); err != nil {
			return err
		}
	}
	fmt.Fprintln(os.Stderr, "starting the emulators (versitygw, fake-gcs-server, Azurite) on loopback …")
	cl, err := startClouds(ctx, filepath.Join(c.dir, "clouds"))
	if err != nil {
		return err
	}
	defer cl.stop()
	var quick *quickBundle
	if c.sections != "deep" {
		if quick, err = prepareQuick(ctx, c, cl); err != nil {
			return err
		}
	}
	var deep *deepReplica
	if c.sections != "quick" {
		if deep, err = prepareDeep(ctx, c, cl, repo); err != nil {
			return err
		}
	}

	rcloneErr := rc.wait(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var rcloneVersion string
	if rcloneErr == nil {
		rcloneVersion = rc.version()
	}

	fmt.Printf("Lifeboat bench — %d CPUs (%s/%s), page cache warm, emulators on loopback\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	if rcloneErr != nil {
		fmt.Printf("rclone: NOT AVAILABLE — %v\n", rcloneErr)
	} else {
		fmt.Printf("rclone: %s, %s; run with its defaults (8 checkers, 4 transfers)\n", rcloneVersion, rc.describe())
	}
	fmt.Printf("load average (1 min) as the timed sections start: %s on %d CPUs (sections 2 and 3 also say how much CPU\n", loadavg(), runtime.NumCPU())
	fmt.Println("the emulators and any other process on the machine took while they were measured)")
	fmt.Println()

	var rcl *rcloneInstall
	if rcloneErr == nil {
		rcl = rc
	}
	if c.sections == "deep" {
		dr, err := deepSection(ctx, c, cl, repo, deep, &buildResult{}, rcl)
		if err != nil {
			return err
		}
		fmt.Printf("== 4. peak memory, deep verify: S3 replica %s MB, file:// replica %s MB; goal for deep S3 ≤ 80 MB: %s\n",
			mb(dr.s3.s.maxRSS), mb(dr.file.s.maxRSS), verdict(dr.s3.s.maxRSS <= 80e6))
		return nil
	}
	if c.sections == "quick" {
		if _, err := quickSection(ctx, c, cl, quick, rcl); err != nil {
			return err
		}
		if err := wanSection(ctx, c, cl, quick, rcl); err != nil {
			return err
		}
		return startupSection(ctx, c)
	}
	// 1. manifest build.
	build, err := buildSection(ctx, c, repo)
	if err != nil {
		return err
	}
	// 2. quick verify.
	qr, err := quickSection(ctx, c, cl, quick, rcl)
	if err != nil {
		return err
	}
	// 3. deep verify.
	dr, err := deepSection(ctx, c, cl, repo, deep, build, rcl)
	if err != nil {
		return err
	}
	// 4. memory.
	memorySection(qr, dr)
	// 5. the WAN, 6. start-up.
	if err := wanSection(ctx, c, cl, quick, rcl); err != nil {
		return err
	}
	if err := startupSection(ctx, c); err != nil {
		return err
	}
	// 7. failover.
	if err := failoverSection(ctx, c); err != nil {
		return err
	}
	// 8. engine-sim ready time per family.
	if err := engineSimSection(ctx, c); err != nil {
		return err
	}
	// 9. boot to WARM, exec and kubernetes launchers.
	if err := bootSection(ctx, c); err != nil {
		return err
	}
	// 10. the registry: lifeboat vs oras.
	if err := registrySection(ctx, c); err != nil {
		return err
	}

	fmt.Printf("\nload average (1 min) as the timed sections end: %s\n", loadavg())
	fmt.Printf("whole bench: %.0fs", time.Since(start).Seconds())
	if !rc.already && rc.err == nil {
		fmt.Printf(" (of which the rclone build, overlapping the untimed set-up: %.0fs)", rc.took.Seconds())
	}
	fmt.Println()
	return nil
}
