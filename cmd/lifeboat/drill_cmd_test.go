//go:build integration

package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	filerouter "lifeboat/failover/routers/file"
	"lifeboat/fleet/router"
	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
	"lifeboat/providers"
)

// drillFleet writes a three-region fleet on local replicas (each a copy of the sample bundle)
// with engine-sim candidates, a file router at its baseline and a file state store.
func drillFleet(t *testing.T, rto string) string {
	t.Helper()
	l, m := fixture(t, sample.Options{})
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "model: {name: llama-demo, manifest: %s}\nregions:\n", m)
	for _, n := range []string{"us-east-1", "eu-west-1", "eu-central-1"} {
		rep := filepath.Join(dir, "replicas", n)
		if r := lifeboat(t, "replicate", "--manifest", m, "--from", l.Root, "--to", rep); r.code != 0 {
			t.Fatalf("replicate: %s", r.stderr)
		}
		fmt.Fprintf(&b, "  %s:\n    replica: %s\n    capacity: {replicas: 4, prefill_tokens_per_s: 8000}\n", n, rep)
		b.WriteString("    launcher: {kind: exec, command: \"lifeboat engine-sim {{.ModelDir}} --config {{.EngineConfig}} --host {{.Host}} --port {{.Port}}\"}\n")
	}
	fmt.Fprintf(&b, `tenants:
  eu-only: [eu-west-1, eu-central-1]
  global: [us-east-1, eu-west-1, eu-central-1]
router: {driver: file, path: weights.json}
failover: {step_percent: 50, step_interval: 100ms, spill_cap_percent: 60, drain_timeout: 2s, failback_dwell: 200ms, max_transitions_per_hour: 1000, assumed_utilization_percent: 20}
state: ./state
sla: {rto: %s}
`, rto)
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	fl := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(fl, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rtr := &filerouter.Router{Path: filepath.Join(dir, "weights.json")}
	if err := rtr.Apply(context.Background(), router.RouterState{Weights: router.Weights{
		"eu-only": {"eu-west-1": 50, "eu-central-1": 50},
		"global":  {"us-east-1": 50, "eu-west-1": 30, "eu-central-1": 20},
	}}); err != nil {
		t.Fatal(err)
	}
	drill := `name: lose-eu-west-1
fleet: fleet.yaml
lose: eu-west-1
hold: 200ms
lock_ttl: 2s
failback_timeout: 30s
approve: [evacuate]
traffic: {requests: 4, interval: 200ms, max_tokens: 2}
expect:
  - residency: eu-only
`
	p := filepath.Join(dir, "drill.yaml")
	if err := os.WriteFile(p, []byte(drill), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDrillImpossibleSLA: a drill whose RTO no failover can meet exits 1 and says by how much
// it missed; the report and the history say the same.
func TestDrillImpossibleSLA(t *testing.T) {
	drill := drillFleet(t, "1ms")
	dir := filepath.Dir(drill)
	out := filepath.Join(dir, "report")
	// without a terminal and without --approve-all, the drill does not start (usage, exit 2)
	r := cli(t, nil, "drill", "run", drill, "--report", out)
	if r.code != 2 || !strings.Contains(r.stdout+r.stderr, "--approve-all") {
		t.Fatalf("unapproved: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "drill", "run", drill, "--report", out, "--approve-all")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "missed the RTO of 1ms by") || !strings.Contains(r.stdout, "Verdict: FAIL") {
		t.Fatalf("does not say by how much it missed:\n%s\n%s", r.stdout, r.stderr)
	}
	var rep struct {
		OK  bool `json:"ok"`
		SLA struct {
			RecoveryS *float64 `json:"recovery_s"`
			MissedBy  float64  `json:"missed_by_s"`
			RTO       float64  `json:"rto_s"`
		} `json:"sla"`
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("report.json: %v", err)
	}
	if rep.OK || rep.SLA.RecoveryS == nil || rep.SLA.MissedBy <= 0 || rep.SLA.MissedBy+rep.SLA.RTO-*rep.SLA.RecoveryS > 1e-6 {
		t.Fatalf("sla %+v", rep.SLA)
	}
	var ju struct {
		Failures int `xml:"failures,attr"`
	}
	jb, _ := os.ReadFile(filepath.Join(out, "junit.xml"))
	if err := xml.Unmarshal(jb, &ju); err != nil || ju.Failures == 0 {
		t.Fatalf("junit.xml: %v failures %d", err, ju.Failures)
	}
	h := cli(t, nil, "drill", "history", "--fleet", filepath.Join(dir, "fleet.yaml"))
	if h.code != 0 || !strings.Contains(h.stdout, "lose-eu-west-1") || !strings.Contains(h.stdout, "1 run(s): 0 passed, 1 failed") {
		t.Fatalf("history: exit %d\n%s%s", h.code, h.stdout, h.stderr)
	}
	hj := cli(t, nil, "drill", "history", "--fleet", filepath.Join(dir, "fleet.yaml"), "-o", "json")
	var hv struct {
		Runs []struct {
			Verdict   string   `json:"verdict"`
			RecoveryS *float64 `json:"recovery_s"`
		} `json:"runs"`
		ExitCode int `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(hj.stdout), &hv); err != nil || len(hv.Runs) != 1 || hv.Runs[0].RecoveryS == nil {
		t.Fatalf("history json %v: %s", err, hj.stdout)
	}
	// dry run: plans, changes nothing
	before, _ := os.ReadFile(filepath.Join(dir, "weights.json"))
	d := cli(t, nil, "drill", "run", drill, "--dry-run")
	after, _ := os.ReadFile(filepath.Join(dir, "weights.json"))
	if d.code != 0 || !strings.Contains(d.stdout, "Evacuation plan") || !strings.Contains(d.stdout, "step 1:") || string(before) != string(after) {
		t.Fatalf("dry run: exit %d\n%s%s", d.code, d.stdout, d.stderr)
	}
}

func TestDrillUsage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "d.yaml")
	os.WriteFile(bad, []byte("name: x\nfleet: f.yaml\nlose: r\nhold: soon\n"), 0o644)
	r := lifeboat(t, "drill", "run", bad)
	if r.code != 2 || !strings.Contains(r.stderr, "d.yaml:4: hold") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r := lifeboat(t, "drill", "history"); r.code != 2 {
		t.Fatalf("history without a store: exit %d", r.code)
	}
}

// TestCheckCorruptReplica: the release gate over three GCS replicas, one with a corrupted shard:
// exit 1, and the JUnit names the region, the replica and the file.
func TestCheckCorruptReplica(t *testing.T) {
	g := emulators.SharedFakeGCS(t)
	g.Bucket("check-gate")
	l, m := fixture(t, sample.Options{})
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "model: {name: llama-demo, manifest: %s}\nregions:\n", m)
	for _, n := range []string{"us-east-1", "eu-west-1", "eu-central-1"} {
		u := "gs://check-gate/" + n
		if r := lifeboat(t, "replicate", "--manifest", m, "--from", l.Root, "--to", u); r.code != 0 {
			t.Fatalf("replicate: %s", r.stderr)
		}
		fmt.Fprintf(&b, "  %s: {replica: %q}\n", n, u)
	}
	b.WriteString("tenants:\n  global: [us-east-1, eu-west-1, eu-central-1]\n")
	fl := filepath.Join(dir, "fleet.yaml")
	os.WriteFile(fl, []byte(b.String()), 0o644)

	if r := lifeboat(t, "check", "--fleet", fl); r.code != 0 {
		t.Fatalf("clean fleet: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// corrupt one shard of eu-west-1: same size, other bytes (GCS records the new CRC32C)
	ctx := context.Background()
	s, err := providers.Open(ctx, "gs://check-gate/eu-west-1", providers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	shard := "model/model-00002-of-00002.safetensors"
	data, _ := os.ReadFile(l.Path(shard))
	data[len(data)/2] ^= 0xff
	if _, err := s.Write(ctx, shard, strings.NewReader(string(data)), providers.WriteOptions{Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	r := lifeboat(t, "check", "--fleet", fl, "-o", "junit")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	var doc struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("junit: %v\n%s", err, r.stdout)
	}
	failed := []string{}
	for _, su := range doc.Suites {
		for _, c := range su.Cases {
			if c.Failure != nil {
				failed = append(failed, su.Name+" | "+c.Name+" | "+c.Failure.Message)
			}
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "eu-west-1 gs://check-gate/eu-west-1") || !strings.Contains(failed[0], shard) || !strings.Contains(failed[0], "CHECKSUM_MISMATCH") {
		t.Fatalf("failures %q", failed)
	}
}
