package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"lifeboat/providers/checksum"
)

// deepReplica is the ≥ 1 GB repository replicated into S3 (versitygw).
type deepReplica struct {
	prefix string
	s3     cloud
}

// prepareDeep seeds the S3 replica of the big repository. versitygw's root is kept between runs,
// so after the first run this is one quick verify that finds nothing to copy.
func prepareDeep(ctx context.Context, c config, cl *clouds, r *repo) (*deepReplica, error) {
	d := &deepReplica{prefix: fmt.Sprintf("deep-%d-%d", c.size, c.shards), s3: cl.byName("S3")}
	fmt.Fprintf(os.Stderr, "seeding the %.2f GB deep-verify replica into S3 (kept between runs) …\n", float64(r.total)/1e9)
	if err := seed(ctx, c, cl, r.manifest, r.root, d.s3, d.prefix); err != nil {
		return nil, err
	}
	return d, nil
}

type deepResult struct {
	s3, file *contender
}

// deepSection is section 3: lifeboat verify --deep of the S3 replica (and of the local
// repository as a file:// replica) vs rclone check --download of the same S3 replica vs
// sha256sum (and openssl) of the same bytes from local disk (section 1's figures, same run).
func deepSection(ctx context.Context, c config, cl *clouds, r *repo, d *deepReplica, b *buildResult, rc *rcloneInstall) (*deepResult, error) {
	// Both the local files and versitygw's copies of them in the page cache: what is measured is
	// hashing and transport, not the disk.
	var onDisk []string
	_ = filepath.WalkDir(filepath.Join(d.s3.onDisk, d.prefix), func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			onDisk = append(onDisk, p)
		}
		return nil
	})
	if err := warm(append(onDisk, r.paths...)); err != nil {
		return nil, err
	}
	s3URL := d.s3.url(d.prefix)
	fileURL := "file://" + r.root
	deep := func(name, url string, extra ...string) *contender {
		argv := append([]string{c.lifeboat, "verify", "--deep", "--manifest", r.manifest}, extra...)
		return &contender{name: name, cmds: []command{{argv: append(argv, url), env: cl.lifeboatEnv}}}
	}
	lbS3 := deep("lifeboat verify --deep, S3 (versitygw)", s3URL)
	lbFile := deep("lifeboat verify --deep, file://", fileURL)
	// The same with SHA-256 (the OCI layer digests) instead of the manifest's BLAKE3: what deep
	// verify costs when an audit asks for the layer digests themselves; no goal is set on it.
	shaS3 := deep("  … --digest sha256, S3 (versitygw)", s3URL, "--digest", "sha256")
	shaFile := deep("  … --digest sha256, file://", fileURL, "--digest", "sha256")
	// rclone's local backend drops the pages of every file it has read from the page cache
	// (fadvise DONTNEED), so after its run the local repository is on disk again: without a
	// re-warm the next file:// run (and rclone's own next run) read part of it from disk.
	rewarm := func() error { return warm(r.paths) }
	lbFile.before, shaFile.before = rewarm, rewarm
	contenders := []*contender{lbS3, shaS3, lbFile, shaFile}
	var rcl *contender
	if rc != nil {
		rcl = &contender{name: "rclone check --download, S3 (versitygw)",
			cmds:   []command{{argv: []string{rc.path, "check", "--download", r.model, d.s3.rclonePath(d.prefix + "/model")}, env: cl.rcloneEnv}},
			before: rewarm}
		contenders = append(contenders, rcl)
	}
	fmt.Fprintln(os.Stderr, "timing deep verify …")
	if err := interleave(ctx, c.deepRuns, 0, contenders...); err != nil {
		return nil, err
	}
	goRate, b3Rate := goSHA256Rate(), blake3Rate()

	fmt.Printf("== 3. deep verify: %d files, %.2f GB (the section 1 repository), median of %d runs (interleaved)\n", len(r.paths), float64(r.total)/1e9, c.deepRuns)
	fmt.Printf("   S3 replica on %s; local replica %s\n", d.s3.emulator, r.root)
	fmt.Println("   sha256sum, openssl: section 1's figures (same files, same run, one process = one core); GB/s is always the replica's bytes / wall")
	fmt.Println("   lifeboat re-hashes with the manifest's BLAKE3 (as collision-resistant as SHA-256); `--digest sha256` rows re-derive the layer digests")
	fmt.Println("   rclone check --download reads the replica and the local copy and compares bytes (no hashing; defaults: 8 checkers)")
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "tool\twall s\tGB/s\tvs sha256sum\tCPU s\tpeak RSS MB\tresult")
	rate := func(x *contender) float64 { return float64(r.total) / x.s.median().Seconds() }
	ref := func(name string, rt float64, note string) {
		if rt > 0 && b.sha256Rate > 0 {
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2fx\t-\t-\t%s\n", name, float64(r.total)/rt, rt/1e9, rt/b.sha256Rate, note)
		}
	}
	ref("sha256sum, local disk, one core", b.sha256Rate, "(section 1)")
	ref("openssl dgst -sha256, local disk, one core", b.opensslRate, "(section 1)")
	ref("Go crypto/sha256, in memory, one core", goRate, "(reference: the hash of --digest sha256, no I/O)")
	ref("Go BLAKE3 (Lifeboat's, lukechampine.com/blake3 kernels), in memory, one core", b3Rate, "(reference: the hash lifeboat verify --deep uses, no I/O)")
	for _, x := range contenders {
		ratio := "-"
		if b.sha256Rate > 0 {
			ratio = fmt.Sprintf("%.2fx", rate(x)/b.sha256Rate)
		}
		o := x.s.last()[0]
		res := fmt.Sprintf("exit %d", o.code)
		if strings.HasPrefix(x.name, "rclone") {
			s := parseRclone(o.stderr)
			s.download = true
			res += ": " + s.String()
		} else if l := lastLine(o.stdout); l != "" {
			res += ": " + l
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%s\t%.2f\t%s\t%s\n", x.name, x.s.median().Seconds(), rate(x)/1e9, ratio,
			x.s.mean(func(r round) time.Duration { return r.cpu }).Seconds(), mb(x.s.maxRSS), res)
	}
	if err := tw.Flush(); err != nil {
		return nil, err
	}
	for _, x := range contenders {
		if o := x.s.last()[0]; o.code != 0 {
			out := o.stdout + "\n" + o.stderr
			if strings.HasPrefix(x.name, "rclone") {
				out = o.stderr
			}
			fmt.Printf("   %s did not come out clean (exit %d):\n%s\n", x.name, o.code, tail(cl.secrets.clean(out), 12))
		}
	}
	fmt.Println("   CPU per run (means):")
	for _, x := range contenders {
		fmt.Printf("     %-41s %s\n", x.name, cpuBreakdown(x, "versitygw"))
	}
	pct := func(x *contender, base float64) string { return fmt.Sprintf("%.0f %%", 100*rate(x)/base) }
	if b.sha256Rate > 0 {
		fmt.Printf("   => vs sha256sum (the target's yardstick): S3 replica %s, local replica %s; target ≥ 70 %%: S3 %s, file %s\n",
			pct(lbS3, b.sha256Rate), pct(lbFile, b.sha256Rate), verdict(rate(lbS3) >= 0.7*b.sha256Rate), verdict(rate(lbFile) >= 0.7*b.sha256Rate))
	}
	if best := max(b.sha256Rate, b.opensslRate); best > b.sha256Rate {
		fmt.Printf("   => vs the fastest local single-core SHA-256 measured (openssl, %.2f GB/s): S3 replica %s, local replica %s; ≥ 70 %%: S3 %s, file %s\n",
			best/1e9, pct(lbS3, best), pct(lbFile, best), verdict(rate(lbS3) >= 0.7*best), verdict(rate(lbFile) >= 0.7*best))
	}
	if rcl != nil {
		fmt.Printf("   => lifeboat deep verify (S3) is %.2fx as fast as rclone check --download on the same replica; goal ≥ 1.5x: %s\n",
			rate(lbS3)/rate(rcl), verdict(rate(lbS3) >= 1.5*rate(rcl)))
	}
	fmt.Printf("   => lifeboat deep verify of file:// at %.2f GB/s; goal ≥ 1.8 GB/s (both cores hashing): %s\n", rate(lbFile)/1e9, verdict(rate(lbFile) >= 1.8e9))
	if rcl != nil {
		fmt.Printf("   => with --digest sha256 (no goal): S3 %.2fx rclone check --download, file:// %.2f GB/s\n", rate(shaS3)/rate(rcl), rate(shaFile)/1e9)
	}
	fmt.Println()
	return &deepResult{s3: lbS3, file: lbFile}, nil
}

// goSHA256Rate is the in-memory SHA-256 rate of one goroutine (one core) in bytes/s: what the
// hash alone costs lifeboat with --digest sha256, without any I/O.
func goSHA256Rate() float64 { return inMemoryRate(sha256.New()) }

// blake3Rate is the in-memory BLAKE3 rate of one goroutine (one core) in bytes/s: what deep
// verify's hash alone costs, without any I/O.
func blake3Rate() float64 { return inMemoryRate(checksum.New(checksum.BLAKE3)) }

// memorySection is section 4: the peak resident memory of every lifeboat verify run above.
func memorySection(q *quickResult, d *deepResult) {
	fmt.Println("== 4. peak memory (maxrss of the lifeboat process, largest over the timed runs; measured through")
	fmt.Println("   cmd/bench/maxrss, since a child Go starts is charged the parent's memory in its own maxrss)")
	rows := []struct {
		name string
		rss  int64
	}{
		{"quick verify, 3 replicas × 200 files", q.lifeboat.s.maxRSS},
		{"deep verify, S3 replica", d.s3.s.maxRSS},
		{"deep verify, file:// replica", d.file.s.maxRSS},
	}
	ok := true
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "   %s\t%s MB\t\n", r.name, mb(r.rss))
		ok = ok && r.rss < 100e6
	}
	_ = tw.Flush()
	fmt.Printf("   => target < 100 MB: %s; goal for deep S3 ≤ 80 MB (margin for bigger repositories): %s\n", verdict(ok), verdict(d.s3.s.maxRSS <= 80e6))
}
