//go:build integration

package main

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
	"lifeboat/providers"
)

// needHidepid skips unless this test can run a process as another user in its own mount
// namespace (root, unshare, setpriv).
func needHidepid(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it runs the cleanup in its own mount namespace as another user")
	}
	for _, tool := range []string{"unshare", "setpriv", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	if out, err := exec.Command("unshare", "--mount", "--fork", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a mount namespace here: %v %s", err, out)
	}
}

// openToAll lets another user read dir and everything under it, and enter its parents up to the
// temp root.
func openToAll(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := fi.Mode().Perm() | 0o044
		if d.IsDir() || fi.Mode().Perm()&0o100 != 0 {
			mode |= 0o011
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Clean(os.TempDir())
	for p := filepath.Dir(dir); strings.HasPrefix(p, root+"/"); p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil {
			_ = os.Chmod(p, fi.Mode().Perm()|0o011)
		}
	}
}

// TestDrillCleanupHidepidLiveDrill (issue 28 §1): a drill that still runs (stopped with SIGSTOP
// mid-evacuation) is invisible to a `drill cleanup` run by another user on a /proc mounted
// hidepid=2, yet kill(pid, 0) answers EPERM: it exists. The cleanup cannot tell whether the
// drill runs, so it touches nothing — the router stays where the drill put it, its candidates
// run, its fault stays, its record stays open — says why and exits 1. The state store is S3
// (versitygw), which both users reach.
func TestDrillCleanupHidepidLiveDrill(t *testing.T) {
	needHidepid(t)
	gw := emulators.SharedVersityGW(t)
	ctx := context.Background()
	if err := gw.Bucket(ctx, "drill-state"); err != nil {
		t.Fatal(err)
	}
	env := []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey, "AWS_EC2_METADATA_DISABLED=true"}
	state := gw.URL("drill-state", testbed.FreshPrefix("hidepid"))
	rig := newCrashRig(t, state, env, "2s", killDrill)
	rig.killEngineSims(t)
	cmd, logf := rig.start(t, "--approve-all")
	rig.waitMidEvacuation(t, cmd, logf)
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGCONT) })
	moved := rig.router(t)
	sims := rig.engineSims()
	tok, err := os.ReadFile(rig.tokenizerPath())
	if err != nil {
		t.Fatal(err)
	}

	bindir, err := os.MkdirTemp("", "lifeboat-hidepid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bindir) })
	bin := filepath.Join(bindir, "lifeboat")
	b, err := os.ReadFile(testbed.LifeboatBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	openToAll(t, bindir)
	openToAll(t, rig.dir)
	fb, _ := os.ReadFile(rig.fleet)
	for _, line := range strings.Split(string(fb), "\n") { // the manifest the fleet names
		if m, ok := strings.CutPrefix(line, "model: {name: llama-demo, manifest: "); ok {
			openToAll(t, filepath.Dir(strings.TrimSuffix(m, "}")))
		}
	}

	hidden := exec.Command("unshare", "--mount", "--fork", "sh", "-c",
		`mount -t proc -o hidepid=2 proc /proc && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"`, "hidepid",
		bin, "drill", "cleanup", rig.drill)
	hidden.Env = append(append(os.Environ(), rig.env...), "HOME="+bindir)
	var out, errb strings.Builder
	hidden.Stdout, hidden.Stderr = &out, &errb
	code := 0
	if err := hidden.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	if code != 1 || !strings.Contains(out.String(), "cannot tell whether the drill still runs") {
		t.Fatalf("cleanup (nobody, /proc hidepid=2) of a live drill: exit %d, want 1 saying it cannot tell\n%s\n%s", code, out.String(), errb.String())
	}
	if rs := rig.router(t); !rs.Weights.Equal(moved.Weights) {
		t.Errorf("the cleanup moved the live drill's router: %v -> %v", moved.Weights, rs.Weights)
	}
	if got := rig.engineSims(); len(got) != len(sims) || len(sims) == 0 {
		t.Errorf("the live drill's candidates: %d before the cleanup, %d after", len(sims), len(got))
	}
	if got, _ := os.ReadFile(rig.tokenizerPath()); string(got) != string(tok) {
		t.Error("the cleanup put the live drill's fault back under it")
	}
	open := func(ctx context.Context, url string) (providers.Store, error) {
		return providers.Open(ctx, url, providers.Options{S3Credentials: credentials.NewStaticCredentialsProvider(gw.AccessKey, gw.SecretKey, "")})
	}
	recs := rig.records(t, open)
	if len(recs) != 1 || recs[0]["closed"] != nil {
		t.Errorf("the live drill's record: want it open, got %v", recs)
	}
	if t.Failed() {
		t.Logf("cleanup: exit %d\n%s%s", code, out.String(), errb.String())
	}
}
