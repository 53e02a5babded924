package emulators

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lifeboat/internal/childproc"
)

// HAProxy is a real haproxy (the Debian package) running a test config in the foreground.
type HAProxy struct {
	Socket string // the admin socket (level admin)
	*Process
	config string // the config file, kept for Restart
}

// HAProxyBinary finds haproxy on PATH or in /usr/sbin; ErrNotInstalled when missing
// (`make routers` installs the Debian package).
func HAProxyBinary() (string, error) {
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy", nil
	}
	return "", fmt.Errorf("haproxy: not on PATH or in /usr/sbin (run `make routers`): %w", ErrNotInstalled)
}

// StartHAProxy runs haproxy with config (the text after the global section, which this adds
// with the admin socket), until the test ends. A missing binary skips the test, or fails it
// under LIFEBOAT_REQUIRE_EMULATORS=1.
func StartHAProxy(t testing.TB, config string) *HAProxy {
	t.Helper()
	bin, err := HAProxyBinary()
	if err != nil {
		Unavailable(t, err)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "admin.sock")
	cfg := fmt.Sprintf("global\n  stats socket %s mode 600 level admin\n  nbthread 1\n\n%s", sock, config)
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &HAProxy{Socket: sock, config: path}
	h.start(t, bin)
	return h
}

// Restart stops haproxy and starts it again from its config file on the same admin socket, as
// a reload or a crash does in production: every runtime change (weights, states) is gone.
func (h *HAProxy) Restart(t testing.TB) {
	t.Helper()
	bin, err := HAProxyBinary()
	if err != nil {
		t.Fatal(err)
	}
	h.Process.Stop()
	_ = os.Remove(h.Socket)
	h.start(t, bin)
}

func (h *HAProxy) start(t testing.TB, bin string) {
	t.Helper()
	out := &tailBuffer{max: 16 << 10}
	cmd := exec.Command(bin, "-db", "-f", h.config)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childproc.Attr(true)
	if err := cmd.Start(); err != nil {
		t.Fatalf("haproxy: %v", err)
	}
	p := &Process{Name: "haproxy", cmd: cmd, out: out, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	h.Process = p
	t.Cleanup(p.Stop)
	sock := h.Socket
	deadline := time.Now().Add(15 * time.Second)
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return
		}
		select {
		case <-p.done:
			t.Fatalf("haproxy exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy did not open %s: %s", sock, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Caddy is a real caddy (v2.11, `make routers` builds it into ./bin) with its admin API on
// loopback.
type Caddy struct {
	Admin string // http://127.0.0.1:PORT
	*Process
}

// CaddyBinary finds ./bin/caddy in the repository; ErrNotInstalled when missing.
func CaddyBinary() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "caddy")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("caddy: %s missing (run `make routers`): %w", p, ErrNotInstalled)
	}
	return p, nil
}

// StartCaddy runs caddy with a JSON config whose admin.listen it sets, until the test ends.
// configJSON must be a JSON object body without the "admin" key; the admin address is put first.
func StartCaddy(t testing.TB, configJSON string) *Caddy {
	t.Helper()
	bin, err := CaddyBinary()
	if err != nil {
		Unavailable(t, err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	admin := fmt.Sprintf("127.0.0.1:%d", port)
	body := strings.TrimSpace(configJSON)
	body = strings.TrimPrefix(body, "{")
	cfg := fmt.Sprintf(`{"admin": {"listen": %q}, %s`, admin, body)
	path := filepath.Join(dir, "caddy.json")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + dir, "XDG_DATA_HOME=" + dir, "XDG_CONFIG_HOME=" + dir}
	p, err := startProcess("caddy", bin, []string{"run", "--config", path}, env, admin, 30*time.Second)
	if err != nil {
		t.Fatalf("caddy: %v", err)
	}
	c := &Caddy{Admin: "http://" + admin, Process: p}
	t.Cleanup(c.Stop)
	return c
}
