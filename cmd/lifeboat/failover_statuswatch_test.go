//go:build integration

package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"lifeboat/internal/clitest"
)

// status --watch redraws while a run is in flight — its step, when the next is due, the lock,
// the router — a new block each refresh when stdout is not a terminal (no escapes), and Ctrl-C
// ends it with exit 0.
func TestFailoverStatusWatch(t *testing.T) {
	clitest.Binary(t)
	dir := failoverDir(t)
	os.WriteFile("fleet.yaml", []byte(strings.Replace(cliFleet, "step_interval: 10ms", "step_interval: 3s", 1)), 0o644)
	run := clitest.Start(t, clitest.Options{}, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "t")
	if !waitForRecord(t, dir, "result", 1) {
		run.Cmd.Process.Kill()
		r := run.Wait()
		t.Fatalf("the run never applied a step: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	var out lockedBuffer
	w := clitest.Start(t, clitest.Options{Stdout: &out}, "failover", "status", "--fleet", "fleet.yaml", "--watch", "--interval", "300ms")
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && (strings.Count(out.String(), "Every 300ms") < 2 || !strings.Contains(out.String(), "next: step 2/")) {
		time.Sleep(50 * time.Millisecond)
	}
	w.Cmd.Process.Signal(syscall.SIGINT)
	r := w.Wait()
	if r.Code != 0 {
		t.Fatalf("status --watch after SIGINT: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{"RUNNING", "next: step 2/", "Router:", "Lock "} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("status --watch lacks %q:\n%s", want, r.Stdout)
		}
	}
	if n := strings.Count(r.Stdout, "Every 300ms"); n < 2 {
		t.Errorf("status --watch drew %d block(s), want at least 2:\n%s", n, r.Stdout)
	}
	if strings.Contains(r.Stdout, "\x1b") {
		t.Errorf("status --watch wrote escapes to a pipe:\n%q", r.Stdout)
	}
	run.Cmd.Process.Signal(syscall.SIGINT)
	run.Wait()
}
