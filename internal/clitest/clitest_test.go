package clitest

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lifeboat/internal/sample"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// The tests' lifeboat is built once and as `make build` builds it: static, -trimpath.
func TestLifeboatBinary(t *testing.T) {
	p := Binary(t)
	if again := Binary(t); again != p {
		t.Fatalf("built twice: %s, %s", p, again)
	}
	bi, err := buildinfo.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]string{}
	for _, s := range bi.Settings {
		set[s.Key] = s.Value
	}
	if set["CGO_ENABLED"] != "0" || set["-trimpath"] != "true" || bi.Path != "lifeboat/cmd/lifeboat" {
		t.Fatalf("not built as make build builds: %s %v", bi.Path, set)
	}
	out, err := exec.Command(p, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "lifeboat ") {
		t.Fatalf("lifeboat version: %v %s", err, out)
	}
}

// Run passes the directory, the environment and stdin, and returns the exit code and both
// streams apart.
func TestRun(t *testing.T) {
	if r := Run(t, Options{}, "version"); r.Code != 0 || !strings.HasPrefix(r.Stdout, "lifeboat ") || r.Stderr != "" {
		t.Fatalf("version: %+v", r)
	}
	if r := Run(t, Options{}, "nosuchcommand"); r.Code != 2 || r.Stdout != "" || !strings.Contains(r.Stderr, "unknown command") {
		t.Fatalf("nosuchcommand: %+v", r)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "here.json"), []byte(`{"schemaVersion": 2, "mediaType": "nope"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := Run(t, Options{Dir: dir}, "manifest", "show", "here.json"); r.Code != 2 || !strings.Contains(r.Stderr, "here.json: mediaType") {
		t.Fatalf("relative to Dir: %+v", r)
	}
	if r := Run(t, Options{Env: []string{"LIFEBOAT_CLITEST=1"}}, "version"); r.Code != 0 {
		t.Fatalf("with Env: %+v", r)
	}
	if r := Run(t, Options{Env: []string{"PATH=/nonexistent"}, OnlyEnv: true}, "version"); r.Code != 0 {
		t.Fatalf("with OnlyEnv: %+v", r)
	}
	if r := Succeed(t, Options{Stdin: strings.NewReader("ignored")}, "version"); !strings.HasPrefix(r.Stdout, "lifeboat ") {
		t.Fatalf("Succeed: %+v", r)
	}
}

// Start's Wait gives a process ended by a signal the shell's code, 128 + its number; a Timeout
// kills the process (exit code -1 from Run). engine-sim loading for a minute is the long run.
func TestStartAndTimeout(t *testing.T) {
	l, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sim := func() []string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		return []string{"engine-sim", l.ModelDir, "--config", l.EngineFile, "--port", fmt.Sprint(port), "--sim-load-delay", "1m"}
	}
	p := Start(t, Options{}, sim()...)
	time.Sleep(200 * time.Millisecond)
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if r := p.Wait(); r.Code != 128+int(syscall.SIGKILL) {
		t.Fatalf("killed: %+v", r)
	}
	start := time.Now()
	if r := Run(t, Options{Timeout: 500 * time.Millisecond}, sim()...); r.Code != -1 || time.Since(start) > 30*time.Second {
		t.Fatalf("Timeout: %+v after %s", r, time.Since(start))
	}
}

// Call runs the run function in-process with an empty stdin, and refuses what only a process of
// its own can have.
func TestCall(t *testing.T) {
	run := func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		b, _ := io.ReadAll(stdin)
		io.WriteString(stdout, strings.Join(args, " ")+"|"+string(b))
		io.WriteString(stderr, "err")
		return 3
	}
	if r := Call(t, run, Options{}, "a", "b"); r != (Result{3, "a b|", "err"}) {
		t.Fatalf("Call: %+v", r)
	}
	if r := Call(t, run, Options{Stdin: strings.NewReader("in")}, "a"); r.Stdout != "a|in" {
		t.Fatalf("Call with Stdin: %+v", r)
	}
}
