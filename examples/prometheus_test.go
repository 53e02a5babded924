//go:build integration

package examples

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"lifeboat/internal/clitest"
	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
)

// Every metric the example alerting rules use is one `lifeboat watch` serves: run on the
// quick-start fleet with its recorded signals, its metrics text names each.
func TestPrometheusAlertsUseServedMetrics(t *testing.T) {
	testbed.LifeboatBinary(t)
	rules, err := os.ReadFile("prometheus/lifeboat-alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// the quick-start fleet, its replicas a sample model's bundle (quick-verified as check does)
	l, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{NoLoRA: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clitest.Succeed(t, clitest.Options{}, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", filepath.Join(dir, "manifest.json"))
	for _, f := range []string{"fleet.yaml", "signals.json", "weights.json"} {
		b, err := os.ReadFile(filepath.Join("quickstart", f))
		if err != nil {
			t.Fatal(err)
		}
		b = regexp.MustCompile(`replica: replicas/\w+`).ReplaceAll(b, []byte("replica: "+l.Root))
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	r := clitest.Run(t, clitest.Options{Dir: dir}, "watch", "--fleet", "fleet.yaml", "--signals", "signals.json", "--once")
	if r.Code != 0 {
		t.Fatalf("watch --once: exit %d\n%s", r.Code, r.Stderr)
	}
	served := regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllStringSubmatch(r.Stdout, -1)
	var names []string
	for _, m := range served {
		names = append(names, m[1])
	}
	used := regexp.MustCompile(`\blifeboat_[a-z_]+`).FindAllString(string(rules), -1)
	if len(used) < 5 {
		t.Fatalf("the rules use only %v", used)
	}
	for _, u := range used {
		if !slices.Contains(names, u) && !strings.HasSuffix(u, "_total") {
			t.Errorf("the rules use %s, which lifeboat watch does not serve (it serves %v)", u, names)
		}
	}
}

// The rules file loads in Prometheus, and its unit tests (lifeboat-alerts.test.yaml) pass:
// promtool check rules and promtool test rules, when promtool is installed.
func TestPrometheusAlertsPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian: apt-get install prometheus)")
	}
	for _, args := range [][]string{{"check", "rules", "lifeboat-alerts.yaml"}, {"test", "rules", "lifeboat-alerts.test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
