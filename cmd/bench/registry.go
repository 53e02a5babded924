package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lifeboat/internal/emulators"
	"lifeboat/internal/faultproxy"
	"lifeboat/internal/sample"
)

// registrySection (10): the model as an OCI artifact. `lifeboat manifest push` + `lifeboat
// restore` from the registry against `oras push` + `oras pull` of the same files, to the same
// local registry (distribution, htpasswd auth on, plain HTTP on loopback), in the same run. Every
// run pushes to a fresh repository, so no blob is already there (no dedup, no cross-repository
// mount) and every byte moves both ways. Both tools move 4 files at once (lifeboat's default -j 4,
// oras --concurrency 4; oras defaults to 5). The order alternates between runs, so neither
// always runs on a warmer machine. Medians of runs.
func registrySection(ctx context.Context, c config) error {
	fmt.Printf("10. registry: manifest push + restore vs oras push + oras pull, same files, same registry, median of %d\n", c.registryRuns)
	oras, err := emulators.OrasPath()
	if err != nil {
		fmt.Printf("   NOT RUN — %v (make emulators)\n\n", err)
		return nil
	}
	dir := filepath.Join(c.dir, "registry")
	os.RemoveAll(dir)
	l, err := sample.Generate(ctx, filepath.Join(dir, "bundle"), sample.Options{TargetBytes: c.registrySize})
	if err != nil {
		return err
	}
	man := filepath.Join(dir, "manifest.json")
	if out, err := exec.CommandContext(ctx, c.lifeboat, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", man).CombinedOutput(); err != nil {
		return fmt.Errorf("manifest build: %v: %s", err, out)
	}
	var files []string // relative to the bundle root: oras titles each layer with the path it is given
	var total int64
	err = filepath.WalkDir(l.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(l.Root, p)
		files, total = append(files, rel), total+info.Size()
		return err
	})
	if err != nil {
		return err
	}
	reg, err := emulators.StartRegistry(filepath.Join(dir, "registry"))
	if err != nil {
		fmt.Printf("   NOT RUN — %v (make emulators)\n\n", err)
		return nil
	}
	defer reg.Stop()
	// The same registry through a proxy adding wanLatency each way (an 80 ms round trip): the
	// request count and the number of round trips each upload waits for are the speed there.
	in := faultproxy.New()
	in.SetLatency(wanLatency, wanLatency)
	wan, err := faultproxy.NewProxy("http://"+reg.Host, in)
	if err != nil {
		return err
	}
	defer wan.Close()
	wanHost := strings.TrimPrefix(wan.URL, "http://")
	// One credentials file for both clients: lifeboat reads DOCKER_CONFIG/config.json, oras
	// --registry-config.
	docker := filepath.Join(dir, "docker")
	cred := map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))}
	auth, _ := json.Marshal(map[string]any{"auths": map[string]any{reg.Host: cred, wanHost: cred}})
	if err := os.MkdirAll(docker, 0o700); err != nil {
		return err
	}
	cfg := filepath.Join(docker, "config.json")
	if err := os.WriteFile(cfg, auth, 0o600); err != nil {
		return err
	}
	env := append(os.Environ(), "DOCKER_CONFIG="+docker)
	fmt.Printf("   %d files, %.1f MB; registry %s (distribution, htpasswd, filesystem storage); %s\n", len(files), float64(total)/1e6, reg.Host, orasVersion(ctx, oras))
	round := 0 // every run of every pass pushes to a fresh repository
	pass := func(host, what string, runs int) error {
		cpu := map[string]time.Duration{} // CPU (user+system) of each tool's runs, summed by what
		timed := func(wd string, name string, args ...string) (time.Duration, error) {
			cmd := exec.CommandContext(ctx, name, args...)
			cmd.Dir, cmd.Env = wd, env
			t0 := time.Now()
			out, err := cmd.CombinedOutput()
			d := time.Since(t0)
			if err != nil {
				return 0, fmt.Errorf("%s %s: %v\n%s", filepath.Base(name), args[0], err, tail(string(out), 20))
			}
			cpu[filepath.Base(name)+" "+args[0]] += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			return d, nil
		}
		var lbPush, lbPull, orasPush, orasPull []time.Duration
		lifeboat := func(i int) error {
			ref := fmt.Sprintf("oci://%s/bench/lifeboat-%d:v1", host, i)
			d, err := timed(dir, c.lifeboat, "manifest", "push", man, "--from", l.Root, ref)
			if err != nil {
				return err
			}
			lbPush = append(lbPush, d)
			out := filepath.Join(dir, fmt.Sprintf("restored-lifeboat-%d", i))
			if d, err = timed(dir, c.lifeboat, "restore", "--manifest", man, "--from", ref, "--to", out); err != nil {
				return err
			}
			lbPull = append(lbPull, d)
			return os.RemoveAll(out) // the disk's page cache and dirty pages: the next run starts alike
		}
		orasRun := func(i int) error {
			ref := fmt.Sprintf("%s/bench/oras-%d:v1", host, i)
			d, err := timed(l.Root, oras, append([]string{"push", "--plain-http", "--registry-config", cfg, "--concurrency", "4", ref}, files...)...)
			if err != nil {
				return err
			}
			orasPush = append(orasPush, d)
			out := filepath.Join(dir, fmt.Sprintf("restored-oras-%d", i))
			if d, err = timed(dir, oras, "pull", "--plain-http", "--registry-config", cfg, "--concurrency", "4", "-o", out, ref); err != nil {
				return err
			}
			orasPull = append(orasPull, d)
			// The same files came back: a pull that wrote nothing would otherwise look fast.
			for _, f := range files {
				if _, err := os.Stat(filepath.Join(out, f)); err != nil {
					return fmt.Errorf("oras pull: %w", err)
				}
			}
			return os.RemoveAll(out)
		}
		for i := range runs {
			first, second := lifeboat, orasRun
			if i%2 == 1 {
				first, second = orasRun, lifeboat
			}
			if err := first(round); err != nil {
				return err
			}
			if err := second(round); err != nil {
				return err
			}
			round++
		}
		med := func(ds []time.Duration) time.Duration {
			s := slices.Clone(ds)
			slices.Sort(s)
			return s[len(s)/2]
		}
		rate := func(d time.Duration) float64 { return float64(total) / 1e6 / d.Seconds() }
		fmt.Printf("   %s, median of %d:\n", what, runs)
		lbName, orasName := filepath.Base(c.lifeboat), filepath.Base(oras)
		perRun := func(k string) float64 { return cpu[k].Seconds() / float64(runs) }
		for _, r := range []struct {
			what         string
			lb, baseline time.Duration
			lbCPU, oCPU  float64
		}{
			{"push (lifeboat manifest push vs oras push)", med(lbPush), med(orasPush), perRun(lbName + " manifest"), perRun(orasName + " push")},
			{"pull (lifeboat restore vs oras pull)", med(lbPull), med(orasPull), perRun(lbName + " restore"), perRun(orasName + " pull")},
		} {
			ratio := r.lb.Seconds() / r.baseline.Seconds()
			verdict := "MET"
			if ratio > 1.0 {
				verdict = "MISSED"
			}
			fmt.Printf("   %-44s lifeboat %7.0fms (%6.1f MB/s, CPU %.2fs)  oras %7.0fms (%6.1f MB/s, CPU %.2fs)  lifeboat/oras %.2f× (goal ≤ 1.00×: %s)\n",
				r.what, ms(r.lb), rate(r.lb), r.lbCPU, ms(r.baseline), rate(r.baseline), r.oCPU, ratio, verdict)
		}
		return nil
	}
	if err := pass(reg.Host, "loopback", c.registryRuns); err != nil {
		return err
	}
	if err := pass(wanHost, fmt.Sprintf("through a proxy adding %s each way (an %s round trip)", wanLatency, 2*wanLatency), c.registryRuns); err != nil {
		return err
	}
	fmt.Println("   (both check every blob's SHA-256; lifeboat restore also fsyncs every file before renaming it into place, the fsyncs batched after the last byte; oras pull does not fsync)")
	fmt.Println()
	return nil
}

func orasVersion(ctx context.Context, oras string) string {
	out, err := exec.CommandContext(ctx, oras, "version").Output()
	if err != nil {
		return "oras (version unknown)"
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(line, "Version:"); ok {
			return "oras " + strings.TrimSpace(v)
		}
	}
	return "oras"
}
