package drills

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"lifeboat/fleet/launch"
)

// startGroup starts `sleep` in its own process group with env, and returns its record.
func startGroup(t *testing.T, region string, env ...string) CandidateRecord {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	p, ok := readProc(cmd.Process.Pid)
	if !ok {
		t.Fatalf("read /proc/%d/stat", cmd.Process.Pid)
	}
	return CandidateRecord{Region: region, PGID: cmd.Process.Pid, Start: p.start}
}

// TestGroupProofNeedsTheMark: a process group is the drill's only when its leader carries the
// recorded mark — with the drill's session known (a host) or unknown (0: inside a PID
// namespace, where session ids of an outside leader read 0, as on CI).
func TestGroupProofNeedsTheMark(t *testing.T) {
	mark := strings.Repeat("0f", 16)
	me, ok := readProc(os.Getpid())
	if !ok {
		t.Fatal("read /proc/self/stat")
	}
	marked := startGroup(t, "eu-west-1", launch.MarkEnv+"="+mark)
	marked.Mark = mark
	other := startGroup(t, "us-east-1", launch.MarkEnv+"="+strings.Repeat("1e", 16))
	other.Mark = mark
	bare := startGroup(t, "eu-central-1")
	bare.Mark = mark
	noMark := marked
	noMark.Mark = ""
	badMark := marked
	badMark.Mark = "../../x"
	wrongStart := marked
	wrongStart.Start = "1"
	for _, sid := range []int{me.session, 0} {
		rec := &DrillRecord{SID: sid}
		if err := groupProof(rec, marked); err != nil {
			t.Errorf("session %d: the marked group is refused: %v", sid, err)
		}
		for name, c := range map[string]CandidateRecord{"another mark": other, "no mark in its environment": bare,
			"no mark recorded": noMark, "a malformed mark": badMark, "another start time": wrongStart} {
			if err := groupProof(rec, c); err == nil {
				t.Errorf("session %d: a group with %s is taken for the drill's", sid, name)
			}
		}
	}
	if me.session > 1 {
		if err := groupProof(&DrillRecord{SID: me.session + 1}, marked); err == nil || !strings.Contains(err.Error(), "session") {
			t.Errorf("a marked group in another session than the drill's is taken: %v", err)
		}
	}
}
