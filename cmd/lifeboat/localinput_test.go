//go:build integration

package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
)

// Issue 19 (medium): every local input of every command goes through the one bounded,
// regular-file-only reader. Each command's file flags are swept with a FIFO (a blocking open
// would hang the process; a single SIGTERM would not end it) and /dev/zero (a plain read grows
// without bound): the real binary, one process per case, must fail fast naming the file.
func TestLocalInputsRefuseFIFOAndDevZero(t *testing.T) {
	bin := testbed.LifeboatBinary(t)
	l, m := fixture(t, sample.Options{})
	dir := failoverDir(t)
	fifo := filepath.Join(dir, "input.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	model := t.TempDir()
	// A fleet whose file router's weights file is the hostile path, and one whose manifest is.
	fleetWith := func(name, old, new string) {
		os.WriteFile(filepath.Join(dir, name), []byte(strings.Replace(cliFleet, old, new, 1)), 0o644)
	}
	cases := [][]string{
		{"failover", "plan", "--fleet", "@", "--evacuate", "eu-west-1", "--signals", "warm.json"},
		{"failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "@"},
		{"failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "@", "--yes"},
		{"failover", "run", "--fleet", "@", "--evacuate", "eu-west-1", "--yes"},
		{"failover", "status", "--fleet", "@"},
		{"failover", "resume", "--fleet", "@"},
		{"failover", "abort", "--fleet", "@", "--yes"},
		{"failover", "restore", "--fleet", "@", "--region", "eu-west-1", "--yes"},
		{"failover", "unlock", "--fleet", "@", "--id", "x"},
		{"failover", "status", "--fleet", "router-%.yaml"},
		{"failover", "plan", "--fleet", "router-%.yaml", "--evacuate", "eu-west-1"},
		{"check", "--fleet", "@"},
		{"check", "--fleet", "manifest-%.yaml"},
		{"boot", "--fleet", "@", "--region", "eu-west-1"},
		{"drill", "run", "@", "--approve-all"},
		{"drill", "history", "--fleet", "@"},
		{"manifest", "show", "@"},
		{"manifest", "lint", "@", "--model", model},
		{"manifest", "diff", "@", m},
		{"manifest", "build", "--model", l.ModelDir, "--engine", "@", "--out", filepath.Join(t.TempDir(), "m.json")},
		{"verify", "--manifest", "@", model},
		{"replicate", "--manifest", "@", "--from", model, "--to", t.TempDir()},
		{"restore", "--manifest", "@", "--from", model, "--to", t.TempDir()},
		{"engine-sim", model, "--config", "@", "--port", "0"},
	}
	for _, hostile := range []struct{ name, path string }{{"fifo", fifo}, {"devzero", "/dev/zero"}} {
		fleetWith("router-"+hostile.name+".yaml", "path: weights.json", "path: "+hostile.path)
		fleetWith("manifest-"+hostile.name+".yaml", "manifest: m.json", "manifest: "+hostile.path)
		for _, c := range cases {
			args := make([]string, len(c))
			for i, a := range c {
				args[i] = strings.ReplaceAll(strings.ReplaceAll(a, "@", hostile.path), "%", hostile.name)
			}
			t.Run(hostile.name+"/"+strings.Join(c[:2], "_")+"/"+strings.Join(c[2:], " "), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, bin, args...)
				cmd.Dir = dir
				cmd.Cancel = func() error { return cmd.Process.Kill() } // a hung read ignores SIGTERM
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				start := time.Now()
				err := cmd.Run()
				if ctx.Err() != nil {
					t.Fatalf("%v hung on %s (killed after %s)\n%s", args, hostile.path, time.Since(start).Round(time.Millisecond), errb.String())
				}
				if err == nil {
					t.Fatalf("%v with %s exited 0\n%s", args, hostile.path, out.String())
				}
				if !strings.Contains(errb.String(), "not a regular file") || !strings.Contains(errb.String(), hostile.path) {
					t.Errorf("%v: stderr does not name %s as not a regular file:\n%s", args, hostile.path, errb.String())
				}
				if peak, floor := childPeakRSS(cmd.ProcessState); peak > max(256<<10, floor) {
					t.Errorf("%v: max RSS %d KiB (inherited from this test process: %d KiB)", args, peak, floor)
				}
			})
		}
	}
}

// Issue 19 (medium): the live signal reader follows a redirect only to the same scheme, host
// and port. A region's /health and /metrics redirect to another port on the same host: nothing
// may reach it.
func TestLiveSignalsRefuseRedirectToAnotherPort(t *testing.T) {
	bin := testbed.LifeboatBinary(t)
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		fmt.Fprintln(w, "vllm:num_requests_waiting 0")
	}))
	t.Cleanup(other.Close)
	var seen atomic.Int64
	region := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(region.Close)
	dir := failoverDir(t)
	fleet := strings.ReplaceAll(cliFleet, "{replica: ./r,", "{replica: ./r, endpoint: "+region.URL+",")
	os.WriteFile(filepath.Join(dir, "live.yaml"), []byte(fleet), 0o644)
	cmd := exec.Command(bin, "failover", "plan", "--fleet", "live.yaml", "--evacuate", "eu-west-1", "-o", "json")
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	if seen.Load() == 0 {
		t.Fatalf("the region's endpoint was never read:\n%s", out)
	}
	if n := elsewhere.Load(); n > 0 {
		t.Fatalf("the signal reader followed %d redirect(s) to another port:\n%s", n, out)
	}
}
