//go:build integration

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// countRecords counts the journal records of kind, across every run.
func countRecords(t *testing.T, dir, kind string) int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "state", "failover", "runs", "*", "*.json"))
	n := 0
	for _, f := range files {
		if strings.Contains(readFile(t, f), `"kind": "`+kind+`"`) {
			n++
		}
	}
	return n
}

// statusRuns is what status -o json|yaml says of the recent runs.
type statusRuns struct {
	Runs []struct {
		Run     string `json:"run" yaml:"run"`
		Outcome string `json:"outcome" yaml:"outcome"`
		Event   *struct {
			Kind   string `json:"kind" yaml:"kind"`
			Region string `json:"region" yaml:"region"`
		} `json:"event" yaml:"event"`
		Holder  string     `json:"holder" yaml:"holder"`
		Reason  string     `json:"reason" yaml:"reason"`
		Started *time.Time `json:"started" yaml:"started"`
		Ended   *time.Time `json:"ended" yaml:"ended"`
		Applied int        `json:"steps_applied" yaml:"steps_applied"`
		Steps   int        `json:"steps" yaml:"steps"`
		Back    int        `json:"steps_rolled_back" yaml:"steps_rolled_back"`
		Error   string     `json:"error" yaml:"error"`
	} `json:"runs" yaml:"runs"`
}

// status lists the fleet's recent runs, newest first, not only the latest: an aborted run (a
// second operator's abort request rolled it back), a done run and a run killed with SIGKILL
// (dead: the lock names its holder, gone on this host) are each listed with their action,
// outcome, who and steps applied, in order, in the table and in -o json and -o yaml; --runs N
// bounds the list; a run whose journal is corrupt is listed as unreadable with the reason and
// the others still are.
func TestFailoverStatusListsRecentRuns(t *testing.T) {
	dir := faultDir(t)
	fleetWith := func(interval string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Replace(cliFleet, "step_interval: 10ms", "step_interval: "+interval, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 1. aborted: a run rolled back at another operator's request
	fleetWith("1500ms")
	cmd, wait := startCLI(t, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "INC-1 first")
	if !waitForRecord(t, dir, "result", 1) {
		cmd.Process.Kill()
		r := wait()
		t.Fatalf("the first run never applied a step: exit %d\n%s", r.code, r.stderr)
	}
	if ab := cli(t, nil, "failover", "abort", "--fleet", "fleet.yaml", "--signals", "warm.json", "--reason", "receivers saturating", "--wait", "60s"); ab.code != 0 {
		r := wait()
		t.Fatalf("abort request: exit %d\n%s\nthe run: %s", ab.code, ab.stderr, r.stderr)
	}
	wait()
	// 2. done
	fleetWith("10ms")
	if r := cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "INC-2 second"); r.code != 0 {
		t.Fatalf("second run: exit %d\n%s", r.code, r.stderr)
	}
	// 3. dead: an abort killed with SIGKILL after its first step
	fleetWith("3s")
	results := countRecords(t, dir, "result")
	cmd, wait = startCLI(t, "failover", "abort", "--fleet", "fleet.yaml", "--signals", "warm.json", "--yes", "--reason", "INC-3 third")
	if !waitForRecord(t, dir, "result", results+1) {
		cmd.Process.Kill()
		r := wait()
		t.Fatalf("the abort never applied a step: exit %d\n%s", r.code, r.stderr)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	if r := wait(); r.code != 137 {
		t.Fatalf("killed abort: exit %d\n%s", r.code, r.stderr)
	}

	type want struct{ action, outcome, reason, steps string }
	wants := []want{
		{"abort", "dead", "INC-3 third", "1/"},
		{"evacuate eu-west-1", "done", "INC-2 second", "3/3"},
		{"evacuate eu-west-1", "aborted", "INC-1 first", "1/3, "},
	}
	r := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml")
	rows := runRows(r.stdout)
	if len(rows) != 3 || !strings.Contains(r.stdout, "Recent runs (newest first") {
		t.Fatalf("status lists %d runs, want 3: exit %d\n%s\n%s", len(rows), r.code, r.stdout, r.stderr)
	}
	for i, w := range wants {
		row := rows[i]
		if !strings.Contains(row, "  "+w.action+"  ") || !strings.Contains(row, "  "+w.outcome+"  ") || !strings.Contains(row, `"`+w.reason+`"`) ||
			!strings.Contains(row, " "+w.steps) || !strings.Contains(row, "@") {
			t.Errorf("row %d: want %+v:\n%s", i, w, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "dead: pid ") || !strings.Contains(r.stdout, "aborted: abort requested by") {
		t.Errorf("the dead and aborted runs do not say why:\n%s", r.stdout)
	}
	if !strings.Contains(rows[0], "  -  ") { // a dead run has not ended
		t.Errorf("the dead run has an end time:\n%s", rows[0])
	}

	// -o json and -o yaml: the same list, newest first
	for _, o := range []string{"json", "yaml"} {
		r := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml", "-o", o)
		var doc statusRuns
		var err error
		if o == "json" {
			err = json.Unmarshal([]byte(r.stdout), &doc)
		} else {
			err = yaml.Unmarshal([]byte(r.stdout), &doc)
		}
		if err != nil || len(doc.Runs) != 3 {
			t.Fatalf("status -o %s: %v, %d runs\n%s", o, err, len(doc.Runs), r.stdout)
		}
		for i, w := range wants {
			got := doc.Runs[i]
			action := ""
			if got.Event != nil {
				action = strings.TrimSpace(got.Event.Kind + " " + got.Event.Region)
			}
			if action != w.action || got.Outcome != w.outcome || got.Reason != w.reason || got.Started == nil || !strings.Contains(got.Holder, "@") || got.Applied < 1 {
				t.Errorf("-o %s runs[%d] = %+v, want %+v", o, i, got, w)
			}
		}
		if doc.Runs[2].Back < 1 || doc.Runs[1].Back != 0 || doc.Runs[1].Steps != 3 {
			t.Errorf("-o %s: steps of the aborted and the done runs: %+v", o, doc.Runs)
		}
		if doc.Runs[0].Ended != nil || doc.Runs[1].Ended == nil || doc.Runs[2].Ended == nil {
			t.Errorf("-o %s: ended is set only on finished runs: %+v", o, doc.Runs)
		}
		if !(doc.Runs[0].Run > doc.Runs[1].Run && doc.Runs[1].Run > doc.Runs[2].Run) {
			t.Errorf("-o %s: not newest first: %s, %s, %s", o, doc.Runs[0].Run, doc.Runs[1].Run, doc.Runs[2].Run)
		}
	}

	// --runs 2: the newest two
	r = cli(t, nil, "failover", "status", "--fleet", "fleet.yaml", "--runs", "2")
	if rows := runRows(r.stdout); len(rows) != 2 || !strings.Contains(rows[0], "dead") || !strings.Contains(rows[1], "INC-2") {
		t.Errorf("--runs 2:\n%s", r.stdout)
	}
	if r := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml", "--runs", "0"); r.code != 2 || !strings.Contains(r.stderr, "--runs") {
		t.Errorf("--runs 0: exit %d\n%s", r.code, r.stderr)
	}

	// a run whose journal is corrupt (the newest): listed as unreadable with the reason
	bad := filepath.Join(dir, "state", "failover", "runs", "999999-20991231T000000Z-badbad")
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "000000.json"), []byte("{not a record"), 0o644)
	r = cli(t, nil, "failover", "status", "--fleet", "fleet.yaml")
	rows = runRows(r.stdout)
	if len(rows) != 4 || !strings.Contains(rows[0], "999999-") || !strings.Contains(rows[0], "unreadable") || !strings.Contains(rows[1], "dead") || !strings.Contains(rows[3], "aborted") {
		t.Fatalf("status with a corrupt run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "999999-20991231T000000Z-badbad: unreadable: journal object failover/runs/999999-20991231T000000Z-badbad/000000.json: not a journal record") {
		t.Errorf("the unreadable run does not say why:\n%s", r.stdout)
	}
	if r.code != 1 {
		t.Errorf("a corrupt journal: exit %d, want 1 (a problem found)", r.code)
	}
}

// runRows are the rows of status's recent-runs table.
func runRows(out string) []string {
	_, table, ok := strings.Cut(out, "Recent runs (")
	if !ok {
		return nil
	}
	var rows []string
	for _, l := range strings.Split(table, "\n") {
		if regexp.MustCompile(`^  \d{6}-[^\s:]+  `).MatchString(l) {
			rows = append(rows, l)
		}
	}
	return rows
}
