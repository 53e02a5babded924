// Command bench measures Lifeboat's manifest build against sha256sum and openssl on the same files
// in the same run, with a warm page cache, and prints the figures side by side. It is run by
// `make bench`; it is not part of the shipped CLI.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"lifeboat/manifest"
	"lifeboat/manifest/sample"
)

func main() {
	lifeboat := flag.String("lifeboat", "bin/lifeboat", "the lifeboat binary under test")
	dir := flag.String("dir", ".bench", "where the benchmark repository is generated (kept between runs)")
	size := flag.Int64("size", 2<<30, "total weight bytes of the generated repository")
	shards := flag.Int("shards", 4, "safetensors shards")
	runs := flag.Int("runs", 3, "timed runs per tool (the median is reported)")
	flag.Parse()
	if err := run(*lifeboat, *dir, *size, *shards, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type result struct {
	name   string
	wall   time.Duration
	maxRSS int64 // bytes
}

func run(lifeboat, dir string, size int64, shards, runs int) error {
	ctx := context.Background()
	repo := filepath.Join(dir, fmt.Sprintf("repo-%d-%d", size, shards))
	if _, err := os.Stat(filepath.Join(repo, "model", "config.json")); err != nil {
		fmt.Fprintf(os.Stderr, "generating a %.1f GiB repository in %s …\n", float64(size)/(1<<30), repo)
		os.RemoveAll(repo)
		if _, err := sample.Generate(ctx, repo, sample.Options{TargetBytes: size, Shards: shards}); err != nil {
			return err
		}
	}
	model := filepath.Join(repo, "model")
	files, err := manifest.WalkDir(model)
	if err != nil {
		return err
	}
	var paths []string
	var total int64
	for _, f := range files {
		paths = append(paths, f.Abs)
		total += f.Size
	}
	out := filepath.Join(dir, "manifest.json")
	tools := []struct {
		name string
		argv []string
	}{
		{"lifeboat manifest build (sha256+md5+crc32c+crc64nvme+crc32)", []string{lifeboat, "manifest", "build", "--model", model, "--out", out}},
		{"sha256sum (one process)", append([]string{"sha256sum"}, paths...)},
		{"openssl dgst -sha256 (one process)", append([]string{"openssl", "dgst", "-sha256"}, paths...)},
		{"md5sum (one process)", append([]string{"md5sum"}, paths...)},
	}
	// Warm the page cache: the first read of each file is not what we measure.
	for _, p := range paths {
		if err := exec.Command("cat", p).Run(); err != nil {
			return err
		}
	}
	var results []result
	for _, t := range tools {
		if _, err := exec.LookPath(t.argv[0]); err != nil {
			fmt.Fprintf(os.Stderr, "skipping %s: %v\n", t.name, err)
			continue
		}
		var walls []time.Duration
		var rss int64
		for range runs {
			w, r, err := timeCmd(t.argv)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			walls = append(walls, w)
			rss = max(rss, r)
		}
		slices.Sort(walls)
		results = append(results, result{t.name, walls[len(walls)/2], rss})
	}
	fmt.Printf("manifest build: %d files, %.2f GB, page cache warm, %d CPUs, median of %d runs\n\n", len(paths), float64(total)/1e9, runtime.NumCPU(), runs)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tool\twall s\tGB/s\tvs sha256sum\tpeak RSS MB\t")
	base := 0.0
	for _, r := range results {
		if r.name == "sha256sum (one process)" {
			base = float64(total) / r.wall.Seconds()
		}
	}
	for _, r := range results {
		rate := float64(total) / r.wall.Seconds()
		ratio := "-"
		if base > 0 {
			ratio = fmt.Sprintf("%.2fx", rate/base)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%s\t%.1f\t\n", r.name, r.wall.Seconds(), rate/1e9, ratio, float64(r.maxRSS)/1e6)
	}
	return tw.Flush()
}

// timeCmd runs argv with output discarded and returns its wall time and peak resident memory.
func timeCmd(argv []string) (time.Duration, int64, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, err
	}
	wall := time.Since(start)
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	var rss int64
	if ru != nil {
		rss = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return wall, rss, nil
}
