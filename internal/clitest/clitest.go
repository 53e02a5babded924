package clitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is the CLI binary of this test process, built at most once.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Binary builds cmd/lifeboat once per test process, as `make build` does (CGO_ENABLED=0,
// -trimpath, -tags disable_grpc_modules, the VCS stamp where the checkout has one), into a temp
// dir that Main (or RemoveBinary) removes. The CLI tests run it as a user does, and the launcher
// tests and drills boot engine-sim candidates with it; one build serves them all.
func Binary(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		dir, err := os.MkdirTemp("", "lifeboat-testbed-bin-")
		if err != nil {
			binary.err = fmt.Errorf("lifeboat binary: %w", err)
			return
		}
		binary.dir, binary.path = dir, filepath.Join(dir, "lifeboat")
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=true", "-tags", "disable_grpc_modules", "-o", binary.path, "lifeboat/cmd/lifeboat")
		// From the module's root: a test that has already changed to a temp dir (t.Chdir) and
		// is the first to want the binary would otherwise build outside the module.
		cmd.Dir = moduleRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("go build lifeboat/cmd/lifeboat: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// moduleRoot is the root of the module this file is in (two levels up), "" (the current
// directory) when its path is not known (a -trimpath build of the tests).
func moduleRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// RemoveBinary removes the built binary's directory (after the tests: Main, testbed.Main).
func RemoveBinary() {
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
}

// Main runs a package's tests, then removes the built binary:
// func TestMain(m *testing.M) { os.Exit(clitest.Main(m)) }. A package whose tests start the
// emulators uses testbed.Main instead, which does this too.
func Main(m *testing.M) int {
	code := m.Run()
	RemoveBinary()
	return code
}

// Options are how one run is made; the zero value runs in the test's directory and environment,
// stdin the null device, with no time limit.
type Options struct {
	Dir     string        // the working directory; "" for the test process's
	Env     []string      // KEY=VALUE entries added to the test process's environment
	OnlyEnv bool          // the environment is exactly Env, not the test process's plus Env
	Stdin   io.Reader     // nil for the null device (Call: an empty reader)
	Timeout time.Duration // the process is killed after it (its exit code is then -1); 0 for none
	// Stdout and Stderr (Start only) also receive the process's output as it is written, for a
	// test that watches a run in flight; they must be safe for concurrent use with their reads.
	Stdout, Stderr io.Writer
}

// Result is how a run ended: its exit code and what it wrote.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// command is the exec.Cmd of one run of the binary, and the cancel of its timeout.
func command(t testing.TB, o Options, args []string) (*exec.Cmd, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if o.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
	}
	cmd := exec.CommandContext(ctx, Binary(t), args...)
	cmd.Dir = o.Dir
	switch {
	case o.OnlyEnv:
		cmd.Env = o.Env
	case o.Env != nil:
		cmd.Env = append(os.Environ(), o.Env...)
	}
	cmd.Stdin = o.Stdin
	return cmd, cancel
}

// Run runs the built binary with args to its end. Only a failure to start it fails the test; any
// exit code is the caller's to judge.
func Run(t testing.TB, o Options, args ...string) Result {
	t.Helper()
	cmd, cancel := command(t, o, args)
	defer cancel()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run lifeboat %v: %v", args, err)
	}
	return Result{code, out.String(), errb.String()}
}

// Succeed runs the built binary as Run does, and fails the test unless it exits 0.
func Succeed(t testing.TB, o Options, args ...string) Result {
	t.Helper()
	r := Run(t, o, args...)
	if r.Code != 0 {
		t.Fatalf("lifeboat %s: exit %d\n%s%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return r
}

// Proc is a run of the binary started in the background.
type Proc struct {
	Cmd       *exec.Cmd
	cancel    context.CancelFunc
	out, errb bytes.Buffer
}

// Start starts the built binary with args in the background; Wait returns how it ended. The
// test's cleanup kills it if it still runs.
func Start(t testing.TB, o Options, args ...string) *Proc {
	t.Helper()
	cmd, cancel := command(t, o, args)
	p := &Proc{Cmd: cmd, cancel: cancel}
	cmd.Stdout, cmd.Stderr = tee(&p.out, o.Stdout), tee(&p.errb, o.Stderr)
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return p
}

// tee is w, and also `also` when it is set.
func tee(w, also io.Writer) io.Writer {
	if also == nil {
		return w
	}
	return io.MultiWriter(w, also)
}

// Wait waits for the process to end. A process ended by a signal has the shell's exit code for
// it, 128 + the signal's number.
func (p *Proc) Wait() Result {
	defer p.cancel()
	err := p.Cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	return Result{code, p.out.String(), p.errb.String()}
}

// Func is the CLI's run function (cmd/lifeboat's run), for its own package's tests.
type Func func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int

// Call runs the CLI in-process through run: faster than the binary, for the tests of cmd/lifeboat
// that need no process of their own. Only Stdin and Timeout of o apply: a directory or an
// environment would change the whole test process's, so asking for one fails the test.
func Call(t testing.TB, run Func, o Options, args ...string) Result {
	t.Helper()
	if o.Dir != "" || o.Env != nil || o.OnlyEnv {
		t.Fatal("clitest.Call: a directory or an environment needs a process of its own: use Run")
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if o.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
	}
	defer cancel()
	stdin := o.Stdin
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var out, errb bytes.Buffer
	code := run(ctx, args, stdin, &out, &errb)
	return Result{code, out.String(), errb.String()}
}
