package emulators

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Prometheus is a real prometheus server (the Debian package) on loopback, scraping the
// targets a test gives it every second, its TSDB in the test's temporary directory.
type Prometheus struct {
	URL string // http://127.0.0.1:PORT
	*Process
}

// PrometheusBinary finds prometheus on PATH or in /usr/bin; ErrNotInstalled when missing
// (`make prometheus` installs the Debian package).
func PrometheusBinary() (string, error) {
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/prometheus"); err == nil {
		return "/usr/bin/prometheus", nil
	}
	return "", fmt.Errorf("prometheus: not on PATH or in /usr/bin (run `make prometheus`): %w", ErrNotInstalled)
}

// StartPrometheus runs prometheus scraping targets (host:port each, /metrics, every 1 s; each
// target's job is its index: job="t0", "t1", …) until the test ends, and waits for /-/ready. A
// missing binary skips the test, or fails it under LIFEBOAT_REQUIRE_EMULATORS=1.
func StartPrometheus(t testing.TB, targets ...string) *Prometheus {
	t.Helper()
	bin, err := PrometheusBinary()
	if err != nil {
		Unavailable(t, err)
	}
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n")
	for i, tg := range targets {
		fmt.Fprintf(&cfg, "  - job_name: t%d\n    scrape_interval: 1s\n    scrape_timeout: 900ms\n    static_configs:\n      - targets: [%q]\n", i, tg)
	}
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var p *Prometheus
	for attempt := 0; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		proc, err := spawnProcess("prometheus", bin, []string{"--config.file=" + path, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + addr, "--log.level=warn", "--storage.tsdb.retention.time=1h"}, nil)
		if err != nil {
			t.Fatalf("prometheus: %v", err)
		}
		proc.Addr = addr
		if err = waitReady(&http.Client{Timeout: 2 * time.Second}, "http://"+addr+"/-/ready", 60*time.Second, proc.done); err == nil {
			p = &Prometheus{URL: "http://" + addr, Process: proc}
			break
		}
		proc.Stop()
		if attempt == 2 {
			t.Fatalf("prometheus did not become ready on %s: %v\n%s", addr, err, proc.Output())
		}
	}
	t.Cleanup(p.Stop)
	return p
}
