package emulators

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"lifeboat/internal/childproc"
)

// ErrNotInstalled: the emulator's binary is missing; `make emulators` installs it.
var ErrNotInstalled = errors.New("emulator not installed (run `make emulators`)")

// RequireEnv, when "1", turns a missing emulator from a skip into a failure (CI sets it).
const RequireEnv = "LIFEBOAT_REQUIRE_EMULATORS"

// RepoRoot returns the directory of the lifeboat module (where ./bin and ./.tools live).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(data), []byte("module lifeboat")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("lifeboat module root not found above the working directory")
		}
		dir = parent
	}
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Process is an emulator running as a child process in its own process group.
type Process struct {
	Name string
	Addr string // 127.0.0.1:PORT
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{}
	once sync.Once
}

// startProcess runs bin with args and env in its own process group (killed with the test binary
// too, through Pdeathsig) and waits until addr answers HTTP.
func startProcess(name, bin string, args, env []string, addr string, timeout time.Duration) (*Process, error) {
	p, err := spawnProcess(name, bin, args, env)
	if err != nil {
		return nil, err
	}
	p.Addr = addr
	if err := waitHTTP(addr, timeout, p.done); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%s did not become ready on %s: %w\n%s", name, addr, err, p.Output())
	}
	return p, nil
}

// spawnProcess runs bin with args and env in its own process group (killed with the test binary
// too, through Pdeathsig), without waiting for it to be ready.
func spawnProcess(name, bin string, args, env []string) (*Process, error) {
	out := &tailBuffer{max: 64 << 10}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childproc.Attr(true)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

// waitHTTP polls addr until any HTTP response arrives, the process exits or the timeout passes.
func waitHTTP(addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-exited:
			return errors.New("process exited")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timeout after %s: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop terminates the whole process group: SIGTERM, then SIGKILL after 5 s.
func (p *Process) Stop() {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // stragglers in the group
	})
}

// Output returns the tail of the process's output.
func (p *Process) Output() string { return p.out.String() }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// startWithRetry retries a start a few times: a free port can be taken between FreePort and the
// emulator binding it.
func startWithRetry[T any](ctx context.Context, start func() (T, error)) (T, error) {
	var zero T
	var err error
	for range 3 {
		var v T
		if v, err = start(); err == nil || errors.Is(err, ErrNotInstalled) {
			return v, err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return zero, err
}
