//go:build integration

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// An abort without --reason is not refused (it is what someone reaches for in a hurry) and
// does not journal an empty reason: it says on stderr what it journals, and the journal and
// status say who aborted and that no reason was given.
func TestFailoverAbortWithoutReason(t *testing.T) {
	dir := faultDir(t)
	if r := cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "INC-5"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	r := cli(t, nil, "failover", "abort", "--fleet", "fleet.yaml", "--signals", "warm.json", "--yes")
	if r.code != 0 || !strings.Contains(r.stderr, "No --reason given: the abort is journaled with the reason") {
		t.Fatalf("abort --yes without --reason: exit %d\n%s", r.code, r.stderr)
	}
	st := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml", "-o", "json")
	var doc struct {
		Holder  string `json:"holder"`
		Reason  string `json:"reason"`
		Journal []struct {
			Kind   string `json:"kind"`
			Holder string `json:"holder"`
			Reason string `json:"reason"`
		} `json:"journal"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Reason != noAbortReason || !strings.Contains(doc.Holder, "@") {
		t.Fatalf("status of the abort: holder %q reason %q\n%s", doc.Holder, doc.Reason, st.stdout)
	}
	for _, rec := range doc.Journal {
		if rec.Kind == "start" && (rec.Reason == "" || rec.Holder == "") {
			t.Errorf("a start record without who or why: %+v", rec)
		}
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, "state", "failover", "lock.json")), noAbortReason) {
		t.Error("the lock does not say why it was taken")
	}
}

// run and restore without --reason journal that none was given, as abort does, never an empty
// reason: in the start records, and in status's list of recent runs (-o json).
func TestFailoverRunWithoutReasonJournalsThat(t *testing.T) {
	dir := faultDir(t)
	if r := cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes"); r.code != 0 {
		t.Fatalf("run without --reason: exit %d\n%s", r.code, r.stderr)
	}
	// eu-west-1 back, calm for an hour: the failback needs no dwell; it stops short of the
	// baseline (headroom), accepted, which is exit 3 — its reason is what this test is about
	back := `{"weights": {"eu-only": {"eu-west-1": 50, "eu-central-1": 50}, "global": {"us-east-1": 60, "eu-west-1": 40}},
 "regions": {"us-east-1": {"warm": true, "healthy": true, "queue_wait_ms": 10, "running": 1, "prefill_tokens_per_s": 60000},
             "eu-west-1": {"warm": true, "healthy": true, "queue_wait_ms": 10, "running": 0, "calm_seconds": 3600},
             "eu-central-1": {"warm": true, "healthy": true, "queue_wait_ms": 10, "running": 1, "prefill_tokens_per_s": 60000}}}`
	if err := os.WriteFile(filepath.Join(dir, "back.json"), []byte(back), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := cli(t, nil, "failover", "restore", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "back.json", "--yes", "--allow-partial", "--hold-timeout", "0s"); r.code != 3 {
		t.Fatalf("restore without --reason: exit %d\n%s", r.code, r.stderr)
	}
	st := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml", "-o", "json")
	var doc statusRuns
	if err := json.Unmarshal([]byte(st.stdout), &doc); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, st.stdout)
	}
	want := []string{"no reason given (failover restore without --reason)", "no reason given (failover run without --reason)"}
	if len(doc.Runs) != 2 || doc.Runs[0].Reason != want[0] || doc.Runs[1].Reason != want[1] {
		t.Fatalf("status's recent runs, want reasons %q:\n%s", want, st.stdout)
	}
	starts := 0
	files, _ := filepath.Glob(filepath.Join(dir, "state", "failover", "runs", "*", "*.json"))
	for _, f := range files {
		var rec struct{ Kind, Reason string }
		if err := json.Unmarshal([]byte(readFile(t, f)), &rec); err != nil || rec.Kind != "start" {
			continue
		}
		starts++
		if !strings.HasPrefix(rec.Reason, "no reason given (failover ") {
			t.Errorf("%s: a start record with reason %q", f, rec.Reason)
		}
	}
	if starts != 2 {
		t.Fatalf("%d start records, want 2 (%d journal files)", starts, len(files))
	}
}

// The file router reads a weights document of another shape (a bare class map, a region's
// weight as a number, a misspelt member, a missing weight) as a clear error naming the file
// and the field, never as zeros, and run changes nothing.
func TestFileRouterWrongShape(t *testing.T) {
	dir := faultDir(t)
	weights := filepath.Join(dir, "weights.json")
	for _, c := range []struct{ doc, field string }{
		{`{"eu-only": {"eu-west-1": 50, "eu-central-1": 50}, "global": {"us-east-1": 60, "eu-west-1": 40}}`, "eu-only: not a member of a weights document"},
		{`{"version": 1, "classes": {"eu-only": {"eu-west-1": 50}}}`, "classes.eu-only.eu-west-1: want an object, got a JSON number"},
		{`{"version": 1, "classes": {"eu-only": {"eu-west-1": {"weigth": 50}}}}`, "classes.eu-only.eu-west-1.weigth: not a member"},
		{`{"version": 1, "classes": {"eu-only": {"eu-west-1": {"state": "ready"}}}}`, "classes.eu-only.eu-west-1.weight: missing"},
		{`{"version": 1, "classes": {"eu-only": {"eu-west-1": {"weight": 50.5}}}}`, "classes.eu-only.eu-west-1.weight: want a whole number"},
		{`{"version": 1}`, "classes: missing"},
	} {
		if err := os.WriteFile(weights, []byte(c.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		r := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml")
		if r.code == 0 || !strings.Contains(r.stderr, "router weights.json: "+c.field) {
			t.Errorf("status with %s: exit %d, want an error naming weights.json and %q\n%s%s", c.doc, r.code, c.field, r.stdout, r.stderr)
		}
		r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "t")
		if r.code == 0 || !strings.Contains(r.stderr, "router weights.json: "+c.field) {
			t.Errorf("run with %s: exit %d\n%s", c.doc, r.code, r.stderr)
		}
		if readFile(t, weights) != c.doc {
			t.Errorf("run rewrote a weights document it could not read: %s", readFile(t, weights))
		}
	}
}

// A restore held because the region has not been calm for failback_dwell ends with a pasteable
// command naming --hold-timeout (longer than the one it observed for), and that command, pasted,
// is accepted and fails back once the region is calm.
func TestFailoverRestoreHintNamesHoldTimeout(t *testing.T) {
	dir := faultDir(t)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Replace(cliFleet, "drain_timeout: 1s}", "drain_timeout: 1s, failback_dwell: 2s}", 1)), 0o644)
	if r := cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "INC-6"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	warm := readFile(t, filepath.Join(dir, "warm.json"))
	calm := func(seconds string) string {
		return strings.Replace(warm, `"eu-west-1": {"warm": true,`, `"eu-west-1": {"calm_seconds": `+seconds+`, "warm": true,`, 1)
	}
	os.WriteFile(filepath.Join(dir, "restless.json"), []byte(calm("0")), 0o644)
	os.WriteFile(filepath.Join(dir, "calm.json"), []byte(calm("3600")), 0o644)
	r := cli(t, nil, "failover", "restore", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "restless.json", "--yes", "--hold-timeout", "0s")
	hint := regexp.MustCompile(`lifeboat failover restore --fleet fleet\.yaml --region eu-west-1 --hold-timeout (\S+)`).FindStringSubmatch(r.stderr)
	if r.code != 3 || !strings.Contains(r.stderr, "failback_dwell") || hint == nil {
		t.Fatalf("held restore: exit %d, want 3 and a --hold-timeout hint\n%s", r.code, r.stderr)
	}
	if d, err := time.ParseDuration(hint[1]); err != nil || d < 2*time.Second {
		t.Errorf("the hint's --hold-timeout %q is not a duration past failback_dwell 2s (%v)", hint[1], err)
	}
	// pasted (with the recorded signals of a calm region, and --yes for no terminal)
	args := append(strings.Fields(strings.TrimPrefix(hint[0], "lifeboat ")), "--signals", "calm.json", "--yes", "--reason", "recovered")
	r = cli(t, nil, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "VERDICT: done") {
		t.Fatalf("the pasted hint %v: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
	}
}
