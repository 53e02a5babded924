package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"lifeboat/internal/sample"
	"lifeboat/manifest"
)

// quickBundle is the small-file DR bundle seeded into the three clouds.
type quickBundle struct {
	root     string // model/, engine/, deploy/ — rclone's source, and lifeboat replicate's
	manifest string // outside root, so that rclone's source holds exactly the bundle
	prefix   string // the replica prefix in each cloud
	files    int
	bytes    int64
}

// warm puts the local bundle back in the page cache: rclone reads it (it is rclone's source)
// and its local backend drops what it read from the cache (fadvise DONTNEED), so that without
// this each rclone run after the first would read the bundle from disk.
func (q *quickBundle) warm() error {
	var paths []string
	err := filepath.WalkDir(q.root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	return warm(paths)
}

// prepareQuick generates a sample bundle of exactly c.quickFiles files (small safetensors shards,
// JSON, YAML), builds its manifest and seeds a replica of it in each cloud with lifeboat
// replicate, so that every object carries the native checksum replicate records.
func prepareQuick(ctx context.Context, c config, cl *clouds) (*quickBundle, error) {
	base := filepath.Join(c.dir, fmt.Sprintf("quick-%d", c.quickFiles))
	q := &quickBundle{root: filepath.Join(base, "bundle"), manifest: filepath.Join(base, "manifest.json"),
		prefix: fmt.Sprintf("quick-%d", c.quickFiles)}
	count := func() (int, int64, error) {
		n, total := 0, int64(0)
		err := filepath.WalkDir(q.root, func(_ string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				info, err := d.Info()
				if err != nil {
					return err
				}
				n++
				total += info.Size()
			}
			return nil
		})
		return n, total, err
	}
	n, _, err := count()
	if err != nil || n != c.quickFiles {
		// Everything but the shards is a fixed set of files; the shards make up the rest.
		shards := 2
		for range 2 {
			os.RemoveAll(q.root)
			if _, err := sample.Generate(ctx, q.root, sample.Options{Layers: 32, Shards: shards, Seed: 200}); err != nil {
				return nil, fmt.Errorf("generating the quick-verify bundle: %w", err)
			}
			if n, _, err = count(); err != nil {
				return nil, err
			}
			if n == c.quickFiles {
				break
			}
			shards += c.quickFiles - n
			if shards < 2 {
				return nil, fmt.Errorf("cannot make a sample bundle as small as %d files", c.quickFiles)
			}
		}
		if n != c.quickFiles {
			return nil, fmt.Errorf("the quick-verify bundle has %d files, not %d", n, c.quickFiles)
		}
	}
	if q.files, q.bytes, err = count(); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "quick-verify bundle: %d files, %.1f MB in %s; building its manifest …\n", q.files, float64(q.bytes)/1e6, q.root)
	argv := []string{c.lifeboat, "manifest", "build", "--model", filepath.Join(q.root, "model"),
		"--engine", filepath.Join(q.root, "engine", "engine.yaml"), "--deploy", filepath.Join(q.root, "deploy"),
		"--name", "bench-quick", "--out", q.manifest}
	if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("lifeboat manifest build: %v\n%s", err, out)
	}
	m, err := manifest.ReadFile(q.manifest)
	if err != nil {
		return nil, err
	}
	if len(m.Files) != q.files {
		return nil, fmt.Errorf("the quick-verify manifest lists %d files, the bundle holds %d", len(m.Files), q.files)
	}
	for _, cld := range cl.list {
		if err := seed(ctx, c, cl, q.manifest, q.root, cld, q.prefix); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// seed replicates root into the prefix of one cloud with lifeboat replicate (it copies only what
// is missing, so a replica kept from an earlier run costs one quick verify).
func seed(ctx context.Context, c config, cl *clouds, manifestFile, root string, cld cloud, prefix string) error {
	to := cld.url(prefix)
	start := time.Now()
	o := command{argv: []string{c.lifeboat, "replicate", "--manifest", manifestFile, "--from", "file://" + root, "--to", to},
		env: cl.lifeboatEnv}.run(ctx)
	if o.err != nil || o.code != 0 {
		return fmt.Errorf("seeding the %s replica: lifeboat replicate exit %d %v\n%s\n%s", cld.name, o.code, o.err,
			tail(cl.secrets.clean(o.stdout), 20), tail(cl.secrets.clean(o.stderr), 20))
	}
	summary := ""
	for _, l := range strings.Split(o.stdout, "\n") {
		if strings.HasPrefix(l, "OK") || strings.HasPrefix(l, "target after") {
			summary += "; " + strings.TrimSpace(l)
		}
	}
	fmt.Fprintf(os.Stderr, "seeded %s (%s) in %.1fs%s\n", to, cld.name, time.Since(start).Seconds(), summary)
	return nil
}

type quickResult struct {
	lifeboat *contender
}

// rcloneSummary is what `rclone check` said about one remote.
type rcloneSummary struct {
	matching, differences, unhashed int
	download                        bool // --download: bytes compared, not hashes
}

var rcloneCount = regexp.MustCompile(`(\d+) (differences found|matching files|hashes could not be checked)`)

func parseRclone(stderr string) rcloneSummary {
	s := rcloneSummary{matching: -1, differences: -1}
	for _, m := range rcloneCount.FindAllStringSubmatch(stderr, -1) {
		n, _ := strconv.Atoi(m[1])
		switch m[2] {
		case "differences found":
			s.differences = n
		case "matching files":
			s.matching = n
		case "hashes could not be checked":
			s.unhashed = n
		}
	}
	return s
}

func (s rcloneSummary) String() string {
	if s.matching < 0 {
		return "no summary (see the error below)"
	}
	out := fmt.Sprintf("%d matching, %d differences", s.matching, s.differences)
	if s.download {
		out += ", bytes compared (--download)"
	} else if s.unhashed > 0 {
		out += fmt.Sprintf(", %d compared by SIZE ONLY (hashes could not be checked)", s.unhashed)
	} else {
		out += ", every file hash-checked (MD5: the only hash local and S3/GCS/Azure share)"
	}
	return out
}

// quickSection is section 2: lifeboat verify of the three replicas in one process vs rclone
// check of each replica against the local bundle.
func quickSection(ctx context.Context, c config, cl *clouds, q *quickBundle, rc *rcloneInstall) (*quickResult, error) {
	var urls []string
	var emus []string
	for _, cld := range cl.list {
		urls = append(urls, cld.url(q.prefix))
		emus = append(emus, cld.emuName)
	}
	lb := &contender{name: "lifeboat verify (3 replicas, one process)",
		cmds: []command{{argv: append([]string{c.lifeboat, "verify", "--manifest", q.manifest}, urls...), env: cl.lifeboatEnv}}}
	contenders := []*contender{lb}
	var conc, seq *contender
	if rc != nil {
		var cmds []command
		for _, cld := range cl.list {
			cmds = append(cmds, command{argv: []string{rc.path, "check", q.root, cld.rclonePath(q.prefix)}, env: cl.rcloneEnv})
		}
		conc = &contender{name: "rclone check ×3, concurrently", concurrent: true, cmds: cmds, before: q.warm}
		seq = &contender{name: "rclone check ×3, one after another", cmds: cmds, before: q.warm}
		contenders = append(contenders, conc, seq)
	}
	fmt.Fprintln(os.Stderr, "timing quick verify …")
	if err := interleave(ctx, c.quickRuns, 1, contenders...); err != nil {
		return nil, err
	}
	lo := lb.s.last()[0]

	fmt.Printf("== 2. quick verify: 3 replicas × %d files (%.1f MB each), loopback emulators, median of %d runs (interleaved, after 1 warm-up)\n", q.files, float64(q.bytes)/1e6, c.quickRuns)
	for _, cld := range cl.list {
		fmt.Printf("   %-5s %s\n", cld.name, cld.emulator)
	}
	fmt.Println("   lifeboat: one `lifeboat verify --manifest M S3 GCS AZURE` process (replicas concurrently, default -j), against the manifest")
	fmt.Println("   rclone:   `rclone check BUNDLE_DIR REMOTE:bucket/prefix` per replica, defaults (8 checkers), against the local bundle")
	fmt.Println("             (it also lists and MD5-hashes the local bundle: that is how it is used), timed two ways: the three")
	fmt.Println("             processes concurrently (wall until the last ends) and one after another (sum)")
	fmt.Println()

	results := map[*contender]string{}
	lbResult := fmt.Sprintf("exit %d", lo.code)
	if last := lastLine(lo.stdout); last != "" {
		lbResult += ": " + last
	}
	results[lb] = lbResult
	var rcloneBest *contender
	var rcloneNotes []string
	if rc != nil {
		clean := 0
		for i, cld := range cl.list {
			o := seq.s.last()[i]
			s := parseRclone(o.stderr)
			note := fmt.Sprintf("   rclone check %-5s exit %d, %s (last run: %.2fs)", cld.name, o.code, s, o.wall.Seconds())
			if o.code != 0 || s.differences != 0 || s.matching != q.files {
				note += "\n     rclone said:\n" + tail(cl.secrets.clean(o.stderr), 8)
			} else {
				clean++
			}
			rcloneNotes = append(rcloneNotes, note)
		}
		results[conc] = fmt.Sprintf("%d of 3 replicas clean", clean)
		results[seq] = results[conc]
		rcloneBest = conc
		if seq.s.median() < conc.s.median() {
			rcloneBest = seq
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "tool\twall s\tfiles/s\tvs rclone (best)\tCPU s\tpeak RSS MB\tresult")
	for _, x := range contenders {
		ratio := "-"
		if rcloneBest != nil {
			ratio = fmt.Sprintf("%.2fx", rcloneBest.s.median().Seconds()/x.s.median().Seconds())
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.0f\t%s\t%.2f\t%s\t%s\n", x.name, x.s.median().Seconds(),
			float64(3*q.files)/x.s.median().Seconds(), ratio, x.s.mean(func(r round) time.Duration { return r.cpu }).Seconds(),
			mb(x.s.maxRSS), results[x])
	}
	if err := tw.Flush(); err != nil {
		return nil, err
	}
	for _, n := range rcloneNotes {
		fmt.Println(n)
	}
	if lo.code != 0 {
		fmt.Printf("   lifeboat verify did not come out clean (exit %d):\n%s\n", lo.code, tail(cl.secrets.clean(lo.stdout+"\n"+lo.stderr), 15))
	}
	fmt.Println("   CPU per run (means):")
	for _, x := range contenders {
		fmt.Printf("     %-42s %s\n", x.name, cpuBreakdown(x, emus...))
	}
	if rcloneBest != nil {
		speedup := rcloneBest.s.median().Seconds() / lb.s.median().Seconds()
		fmt.Printf("   => lifeboat quick verify is %.2fx as fast as rclone check at its best (%s); goal on loopback ≥ 5x: %s\n",
			speedup, strings.TrimPrefix(rcloneBest.name, "rclone check ×3, "), verdict(speedup >= 5))
	} else {
		fmt.Println("   => no rclone to compare with (see above)")
	}
	fmt.Println()
	return &quickResult{lifeboat: lb}, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func verdict(ok bool) string {
	if ok {
		return "MET"
	}
	return "MISSED"
}
