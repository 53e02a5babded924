//go:build integration

package failover

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lifeboat/internal/base/lockowner"
)

// ownerOf records a running process as its holder would (this host's identity, its pid and start).
func ownerOf(t *testing.T, pid int) *lockowner.Owner {
	t.Helper()
	b, err := lockowner.ReadProcStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	start, _, ok := lockowner.ParseProcStat(b)
	if !ok {
		t.Fatalf("pid %d: no start time in %q", pid, b)
	}
	o := *lockowner.ThisOwner()
	o.PID, o.Start = pid, start
	return &o
}

// The judgement itself, on real processes: a running one is alive; an unreadable /proc (hidepid)
// with kill(0) saying it exists cannot be told; another boot id cannot be told; another start
// time is a reused pid (gone); a reaped process is gone.
func TestOwnerCheckerJudgesRealProcesses(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
	o := ownerOf(t, sleep.Process.Pid)
	real := &lockowner.Checker{}
	if l, why := real.Judge(o); l != lockowner.Alive {
		t.Fatalf("a running process: %s (%s), want alive", l, why)
	}
	hidden := &lockowner.Checker{ReadStat: func(int) ([]byte, error) { return nil, os.ErrNotExist }}
	if l, why := hidden.Judge(o); l != lockowner.CannotTell {
		t.Fatalf("a running process under hidepid: %s (%s), want cannot tell", l, why)
	}
	other := *o
	other.Boot = "another-boot"
	if l, why := real.Judge(&other); l != lockowner.CannotTell || !strings.Contains(why, "another host") {
		t.Fatalf("another boot id (a cloned VM or an earlier boot): %s (%s), want cannot tell", l, why)
	}
	reused := *o
	reused.Start--
	if l, why := real.Judge(&reused); l != lockowner.Gone {
		t.Fatalf("a pid now another process: %s (%s), want gone", l, why)
	}
	sleep.Process.Kill()
	sleep.Wait()
	if l, why := real.Judge(o); l != lockowner.Gone {
		t.Fatalf("a reaped process: %s (%s), want gone", l, why)
	}
	if l, _ := lockowner.Judge(nil); l != lockowner.CannotTell {
		t.Fatalf("no owner recorded: %s, want cannot tell", l)
	}
}

// EPERM is "exists": a process of uid 65534 judged from uid 65533 (kill(0) answers EPERM) is
// alive while /proc shows its start time, cannot be told under hidepid=2, and is gone once it
// exits. The judgement runs in this test binary re-executed as the other user.
func TestOwnerCheckerOtherUser(t *testing.T) {
	if os.Getenv("LIFEBOAT_JUDGE_OWNER") != "" {
		var o lockowner.Owner
		if err := json.Unmarshal([]byte(os.Getenv("LIFEBOAT_JUDGE_OWNER")), &o); err != nil {
			t.Fatal(err)
		}
		l, why := lockowner.Judge(&o)
		fmt.Printf("JUDGED %s: %s\n", l, why)
		return
	}
	needRootNamespaces(t)
	dir, err := os.MkdirTemp("", "lifeboat-judge-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	self := filepath.Join(dir, "failover.test")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, exe, self, 0o755)
	holder := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for { // setpriv execs sleep in the same pid: wait for the exec (the start time is the process's)
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", holder.Process.Pid))
		if strings.TrimSpace(string(b)) == "sleep" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	rec, _ := json.Marshal(ownerOf(t, holder.Process.Pid))
	judge := func(hidepid bool) string {
		t.Helper()
		script := `exec setpriv --reuid=65533 --regid=65533 --clear-groups "$@"`
		if hidepid {
			script = `mount -t proc -o hidepid=2 proc /proc && ` + script
		}
		cmd := exec.Command("unshare", "--mount", "--fork", "sh", "-c", script, "judge", self, "-test.run=^TestOwnerCheckerOtherUser$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LIFEBOAT_JUDGE_OWNER="+string(rec))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("judge as uid 65533: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(line, "JUDGED "); ok {
				return v
			}
		}
		t.Fatalf("no judgement in %s", out)
		return ""
	}
	if got := judge(false); !strings.HasPrefix(got, "alive") {
		t.Fatalf("another user's running process (kill(0): EPERM): %s, want alive", got)
	}
	if got := judge(true); !strings.HasPrefix(got, "cannot tell") {
		t.Fatalf("another user's running process under hidepid=2: %s, want cannot tell", got)
	}
	holder.Process.Kill()
	holder.Wait()
	if got := judge(true); !strings.HasPrefix(got, "gone") {
		t.Fatalf("another user's process after it exited: %s, want gone", got)
	}
}

// JudgeProcess is the process-level half of Judge, shared with drill cleanup: a live process with
// its start time is alive; an unreadable stat (hidepid) or an unknown start time cannot be told,
// never gone; another start time or a reaped pid is gone.
func TestJudgeProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	o := ownerOf(t, sleep.Process.Pid)
	hidden := &lockowner.Checker{ReadStat: func(int) ([]byte, error) { return nil, os.ErrNotExist }}
	for _, c := range []struct {
		name  string
		c     *lockowner.Checker
		start uint64
		want  lockowner.Liveness
	}{
		{"running", &lockowner.Checker{}, o.Start, lockowner.Alive},
		{"hidepid", hidden, o.Start, lockowner.CannotTell},
		{"no start time", &lockowner.Checker{}, 0, lockowner.CannotTell},
		{"pid reused", &lockowner.Checker{}, o.Start + 1, lockowner.Gone},
	} {
		if got, why := c.c.JudgeProcess(o.PID, c.start); got != c.want {
			t.Errorf("%s: %v (%s), want %v", c.name, got, why, c.want)
		}
	}
	_ = sleep.Process.Kill()
	_ = sleep.Wait()
	if got, why := hidden.JudgeProcess(o.PID, o.Start); got != lockowner.Gone {
		t.Errorf("a reaped process, even with /proc hidden: %v (%s), want gone (kill(0) answers ESRCH)", got, why)
	}
}
