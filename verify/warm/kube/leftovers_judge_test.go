package kube

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"lifeboat/fleet/launch"
)

// A boot's recorded process is gone only when proven (issue 28 §2's rule, shared with failover):
// a running process with its start time is not gone, nor one whose start time is unknown; a
// reused pid (another start time) and a reaped one are.
func TestBootProcessGoneOnlyWhenProven(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	pid := sleep.Process.Pid
	start, err := strconv.ParseUint(launch.ProcStart(pid), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if processGone(pid, start) {
		t.Error("a running boot process was judged gone")
	}
	if processGone(pid, 0) {
		t.Error("a running process with no recorded start time was judged gone (cannot tell)")
	}
	if !processGone(pid, start+1) {
		t.Error("a reused pid (another start time) was not judged gone")
	}
	_ = sleep.Process.Kill()
	_ = sleep.Wait()
	if !processGone(pid, start) {
		t.Error("a reaped process was not judged gone")
	}
}
