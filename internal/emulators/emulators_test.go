package emulators

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

type running interface {
	Stop()
	addr() string
	pid() int
}

// Each emulator starts on its own free loopback port, answers HTTP, and is gone — its whole
// process group — after Stop.
func TestStartStop(t *testing.T) {
	t.Parallel()
	starts := map[string]func(dir string) (running, error){
		"versitygw": func(dir string) (running, error) { return StartVersityGW(dir) },
		"azurite":   func(dir string) (running, error) { return StartAzurite(dir) },
		"registry":  func(dir string) (running, error) { return StartRegistry(dir) },
	}
	for name, start := range starts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := start(t.TempDir())
			if err != nil {
				Unavailable(t, err)
			}
			if !listening(p.addr()) {
				t.Fatalf("%s not listening on %s", name, p.addr())
			}
			resp, err := http.Get("http://" + p.addr() + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			pid := p.pid()
			p.Stop()
			p.Stop() // idempotent
			if listening(p.addr()) {
				t.Fatalf("%s still listening after Stop", name)
			}
			if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Fatalf("process group %d still alive: %v", pid, err)
			}
		})
	}
}

func (s *S3) addr() string       { return s.proc.Addr }
func (s *S3) pid() int           { return s.proc.cmd.Process.Pid }
func (a *Azurite) addr() string  { return a.proc.Addr }
func (a *Azurite) pid() int      { return a.proc.cmd.Process.Pid }
func (r *Registry) addr() string { return r.proc.Addr }
func (r *Registry) pid() int     { return r.proc.cmd.Process.Pid }

func TestFakeGCS(t *testing.T) {
	t.Parallel()
	g, err := StartFakeGCS(nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(fmt.Sprintf("http://%s/storage/v1/b/%s/o", g.Host, DeniedGCSBucket))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("denied bucket answered %d", resp.StatusCode)
	}
	g.Stop()
	if listening(g.Host) {
		t.Fatal("still listening after Stop")
	}
}

func TestUnavailable(t *testing.T) {
	missing := fmt.Errorf("x: %w", ErrNotInstalled)
	t.Run("skips", func(t *testing.T) {
		t.Setenv(RequireEnv, "")
		ft := &fakeTB{TB: t}
		func() {
			defer func() { recover() }()
			Unavailable(ft, missing)
		}()
		if !ft.skipped || ft.failed {
			t.Fatalf("skipped=%v failed=%v", ft.skipped, ft.failed)
		}
	})
	t.Run("required", func(t *testing.T) {
		t.Setenv(RequireEnv, "1")
		ft := &fakeTB{TB: t}
		func() {
			defer func() { recover() }()
			Unavailable(ft, missing)
		}()
		if ft.skipped || !ft.failed {
			t.Fatalf("skipped=%v failed=%v", ft.skipped, ft.failed)
		}
	})
}

// fakeTB records Skip/Fatal instead of acting on them.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()              {}
func (f *fakeTB) Skipf(string, ...any) { f.skipped = true; panic("skip") }
func (f *fakeTB) Fatal(...any)         { f.failed = true; panic("fatal") }
