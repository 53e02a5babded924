//go:build integration

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"lifeboat/fleet/notify"
	"lifeboat/internal/testbed"
)

// receiver is a webhook receiver in the test process: it records every body it is sent.
type receiver struct {
	mu     sync.Mutex
	bodies []map[string]any
	hits   int
}

func (r *receiver) record(req *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hits++
	r.bodies = append(r.bodies, m)
}

func (r *receiver) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, b := range r.bodies {
		out = append(out, fmtAny(b["event"]))
	}
	return out
}

func fmtAny(v any) string { s, _ := v.(string); return s }

// TestFailoverNotificationsThroughBinary: a fleet with three webhooks — a healthy generic JSON
// receiver, a Slack-format one that always answers 500, one that never answers. A refused run
// and a completed run through the binary: the healthy receiver gets refused, start and done with
// the documented body; the 500 one is tried three times per event and the run still exits 0;
// the hanging one delays nothing: its timeout is notify.MaxTimeout (30 s) and it never answers,
// so a delivery that blocked a step would put at least 30 s between the run's start record and
// its next one, and hold each command for 30 s before the flush; no two consecutive journal
// records of the run are that far apart, and each command ends before the hang would have
// ended plus notify.FlushDeadline; no webhook URL appears in any body or log line.
func TestFailoverNotificationsThroughBinary(t *testing.T) {
	testbed.LifeboatBinary(t) // built before failoverDir changes the working directory
	var ok, bad receiver
	okSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { ok.record(req) }))
	defer okSrv.Close()
	badSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		bad.record(req)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer badSrv.Close()
	release := make(chan struct{})
	hangSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-release:
		case <-req.Context().Done():
		}
	}))
	defer hangSrv.Close()
	defer close(release)

	const secret = "T0KEN-s3cr3t-9f8e7d"
	dir := failoverDir(t)
	if err := os.WriteFile(filepath.Join(dir, "hang.url"), []byte(hangSrv.URL+"/hooks/"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fleet := cliFleet + `notify:
  - {name: oncall, url_env: LB_TEST_HOOK_OK, format: json}
  - {name: slack, url_env: LB_TEST_HOOK_BAD, format: slack, events: [start, done, refused]}
  - {name: dead, url_file: hang.url, format: json, timeout: 30s}
`
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"LB_TEST_HOOK_OK=" + okSrv.URL + "/services/" + secret, "LB_TEST_HOOK_BAD=" + badSrv.URL + "/services/" + secret + "?token=" + secret}

	// hang is how long one delivery to the dead webhook would hold a caller that waited for it.
	const hang = notify.MaxTimeout
	timed := func(args ...string) result {
		t.Helper()
		began := time.Now()
		r := cli(t, env, args...)
		// A bound that proves the delivery did not block (a blocked command takes at least
		// hang + FlushDeadline), not a performance assertion: the run itself is ~1 s.
		if took := time.Since(began); took >= hang+notify.FlushDeadline {
			t.Errorf("%v took %s with a webhook that hangs %s: delivery held the command (flush deadline %s)", args[:2], took.Round(time.Millisecond), hang, notify.FlushDeadline)
		}
		return r
	}
	r := timed("failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "cold.json", "--yes", "--reason", "INC-7")
	if r.code != 3 {
		t.Fatalf("refused run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	logs := r.stdout + r.stderr
	r = timed("failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "INC-7")
	if r.code != 0 || !strings.Contains(r.stdout, "Final weights") {
		t.Fatalf("run with a failing and a hanging webhook: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	logs += r.stdout + r.stderr
	// Each notified record (start first) is followed by the next without waiting for the
	// webhook: no gap between consecutive records of the run reaches the hang.
	recs := runRecords(t, dir, "start")
	if len(recs) < 4 {
		t.Fatalf("journal of the completed run: %d records, want start, steps and done", len(recs))
	}
	for i := 1; i < len(recs); i++ {
		if gap := recs[i].Time.Sub(recs[i-1].Time); gap >= hang {
			t.Errorf("journal records %d (%s) and %d (%s) are %s apart: a step waited for the hanging webhook", i-1, recs[i-1].Kind, i, recs[i].Kind, gap)
		}
	}

	if got := strings.Join(ok.events(), " "); got != "failover.refused failover.start failover.done" {
		t.Fatalf("events at the healthy receiver: %q", got)
	}
	ok.mu.Lock()
	refused, start, done := ok.bodies[0], ok.bodies[1], ok.bodies[2]
	ok.mu.Unlock()
	for _, b := range []map[string]any{refused, start, done} {
		if b["schema"] != "lifeboat.notification/v1" || b["fleet"] != "fleet.yaml" || b["model"] != "llama-demo" ||
			b["operation"] != "evacuate eu-west-1" || b["reason"] != "INC-7" || fmtAny(b["run"]) == "" || fmtAny(b["next"]) == "" {
			t.Errorf("body %v", b)
		}
		if regions, _ := b["regions"].([]any); len(regions) == 0 || regions[0] != "eu-west-1" {
			t.Errorf("regions of %v", b)
		}
		if classes, _ := b["classes"].([]any); len(classes) != 2 {
			t.Errorf("classes of %v: want eu-only and global", b)
		}
	}
	if refused["verdict"] != "refused" || refused["next"] != "lifeboat failover plan --fleet fleet.yaml --region eu-west-1" || fmtAny(refused["detail"]) == "" {
		t.Errorf("refused body: %v", refused)
	}
	if start["verdict"] != "started" || done["verdict"] != "done" || done["next"] != "lifeboat failover status --fleet fleet.yaml" || start["run"] != done["run"] {
		t.Errorf("start/done bodies: %v / %v", start, done)
	}

	// The 500 receiver: Slack-format bodies, each event tried Attempts (3) times.
	bad.mu.Lock()
	hits, first := bad.hits, bad.bodies[0]
	bad.mu.Unlock()
	if hits != 9 {
		t.Errorf("the 500 receiver got %d attempts, want 3 events × 3 attempts", hits)
	}
	if txt := fmtAny(first["text"]); !strings.Contains(txt, "failover.refused") || first["blocks"] == nil {
		t.Errorf("slack body: %v", first)
	}
	if !strings.Contains(logs, `webhook=slack event=failover.start attempts=3 last="HTTP 500"`) ||
		!strings.Contains(logs, "webhook=dead") || !strings.Contains(logs, "not delivered") {
		t.Errorf("warnings about undelivered notifications missing:\n%s", logs)
	}
	// No webhook URL anywhere: not in a log line, not in a body.
	all, _ := json.Marshal([]any{ok.bodies, bad.bodies})
	for _, s := range []string{logs, string(all)} {
		if strings.Contains(s, secret) || strings.Contains(s, okSrv.URL) || strings.Contains(s, hangSrv.URL) {
			t.Fatalf("a webhook URL leaked:\n%s", s)
		}
	}
}

// TestFleetNotifyValidation: every mistake in notify: is reported at once, with its line.
func TestFleetNotifyValidation(t *testing.T) {
	testbed.LifeboatBinary(t)
	dir := failoverDir(t)
	fleet := cliFleet + `notify:
  - {url: "https://hooks.slack.com/services/T0/B0/xyz", format: slack}
  - {url_env: OK_VAR, format: teams}
  - {url_env: A, url_file: f, format: json}
  - {format: json, events: [start, finish]}
  - {url_env: "not a var", format: json, timeout: 5m}
`
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json")
	n := strings.Count(cliFleet, "\n")
	for _, want := range []string{
		"fleet.yaml:" + itoa(n+2) + ": notify[0].url: a webhook URL is a secret",
		"fleet.yaml:" + itoa(n+3) + `: notify[1].format: want slack or json, got "teams"`,
		"fleet.yaml:" + itoa(n+4) + ": notify[2]: give one of url_env and url_file, not both",
		"fleet.yaml:" + itoa(n+5) + ": notify[3]: url_env: VAR or url_file: PATH is required",
		"fleet.yaml:" + itoa(n+5) + `: notify[3].events[1]: unknown event "finish"`,
		"fleet.yaml:" + itoa(n+6) + `: notify[4].url_env: want the name of an environment variable`,
		"fleet.yaml:" + itoa(n+6) + ": notify[4].timeout: at most 30s",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("missing %q", want)
		}
	}
	if r.code != 2 || strings.Contains(r.stderr, "xyz") {
		t.Fatalf("exit %d, want 2, without the inline URL's secret\n%s", r.code, r.stderr)
	}
}

// journalRecord is what the notification tests read of a journal record.
type journalRecord struct {
	Kind   string    `json:"kind"`
	Time   time.Time `json:"time"`
	Detail string    `json:"detail"`
}

// runRecords are the records, in order, of the one run in dir's journal that has a record of
// kind (a test's run among refused ones).
func runRecords(t *testing.T, dir, kind string) []journalRecord {
	t.Helper()
	runs, _ := filepath.Glob(filepath.Join(dir, "state", "failover", "runs", "*"))
	var found [][]journalRecord
	for _, run := range runs {
		files, _ := filepath.Glob(filepath.Join(run, "*.json"))
		slices.Sort(files)
		var recs []journalRecord
		has := false
		for _, f := range files {
			var rec journalRecord
			b, err := os.ReadFile(f)
			if err == nil {
				err = json.Unmarshal(b, &rec)
			}
			if err != nil {
				t.Fatalf("journal record %s: %v", f, err)
			}
			recs = append(recs, rec)
			has = has || rec.Kind == kind
		}
		if has {
			found = append(found, recs)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d runs in the journal have a %q record, want 1", len(found), kind)
	}
	return found[0]
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestDrillVerdictNotification: `drill run` on a fleet with two webhooks — a generic JSON one
// and a Slack-format one, on loopback receivers — delivers the drill's verdict to both, once
// each, with the verdict the command ended with, and no secret: the webhook URLs (their tokens
// in path and query, from the environment variables the fleet names) appear in no body and no
// log line.
func TestDrillVerdictNotification(t *testing.T) {
	drill := drillFleet(t, "5m")
	dir := filepath.Dir(drill)
	var js, slack receiver
	jsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { js.record(req) }))
	defer jsSrv.Close()
	slackSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { slack.record(req) }))
	defer slackSrv.Close()
	const secret = "xoxb-DR1LL-s3cr3t-4a5b6c"
	f, err := os.OpenFile(filepath.Join(dir, "fleet.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("notify:\n  - {name: audit, url_env: LB_TEST_DRILL_HOOK, format: json, events: [drill]}\n  - {name: chat, url_env: LB_TEST_DRILL_SLACK, format: slack}\n")
	f.Close()
	env := []string{"LB_TEST_DRILL_HOOK=" + jsSrv.URL + "/hooks/" + secret, "LB_TEST_DRILL_SLACK=" + slackSrv.URL + "/services/T0/B0/" + secret + "?token=" + secret}

	r := cli(t, env, "drill", "run", drill, "--approve-all")
	verdict := "PASS"
	if r.code != 0 {
		verdict = "FAIL"
	}
	if !strings.Contains(r.stdout, "Verdict: "+verdict) {
		t.Fatalf("drill: exit %d, no %q verdict\n%s\n%s", r.code, verdict, r.stdout, r.stderr)
	}
	if got := strings.Join(js.events(), " "); got != "drill.verdict" {
		t.Fatalf("events at the JSON receiver: %q, want one drill.verdict\n%s", got, r.stderr)
	}
	js.mu.Lock()
	body := js.bodies[0]
	js.mu.Unlock()
	fleet := filepath.Join(dir, "fleet.yaml") // the drill file's fleet:, resolved from its directory
	if body["schema"] != "lifeboat.notification/v1" || body["event"] != "drill.verdict" || body["verdict"] != verdict || body["model"] != "llama-demo" ||
		body["run"] != "lose-eu-west-1" || body["operation"] != "drill: lose eu-west-1" || body["fleet"] != fleet ||
		body["next"] != "lifeboat drill history --fleet "+fleet || !strings.Contains(fmtAny(body["detail"]), "lose-eu-west-1") {
		t.Errorf("drill verdict body: %v", body)
	}
	if regions, _ := body["regions"].([]any); len(regions) != 1 || regions[0] != "eu-west-1" {
		t.Errorf("regions of %v", body)
	}
	slack.mu.Lock()
	var sl map[string]any
	for _, b := range slack.bodies {
		if strings.Contains(fmtAny(b["text"]), "drill.verdict") {
			sl = b
		}
	}
	slackBodies := slack.bodies
	slack.mu.Unlock()
	if sl == nil || !strings.Contains(fmtAny(sl["text"]), verdict) || sl["blocks"] == nil {
		t.Fatalf("no Slack-format drill verdict: %v", slackBodies)
	}
	all, _ := json.Marshal([]any{js.bodies, slackBodies})
	for _, s := range []string{r.stdout + r.stderr, string(all)} {
		if strings.Contains(s, secret) || strings.Contains(s, jsSrv.URL) || strings.Contains(s, slackSrv.URL) {
			t.Fatalf("a webhook URL or its token leaked:\n%s", s)
		}
	}
}
