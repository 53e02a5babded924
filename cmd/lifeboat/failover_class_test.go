//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lifeboat/internal/emulators"
)

// Tests of issue 22's "a class that cannot move does not block the others": --class and
// --skip-blocked, through processes of the built binary against a real router.

// fileRouterCells reads the file router's weights.json: class → region → "weight state".
func fileRouterCells(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	var doc struct {
		Classes map[string]map[string]struct {
			Weight int    `json:"weight"`
			State  string `json:"state"`
		} `json:"classes"`
	}
	if err := json.Unmarshal([]byte(readFile(t, path)), &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]map[string]string{}
	for c, regions := range doc.Classes {
		out[c] = map[string]string{}
		for r, v := range regions {
			st := v.State
			if st == "" {
				st = "ready"
			}
			out[c][r] = fmt.Sprintf("%d %s", v.Weight, st)
		}
	}
	return out
}

func sameCells(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// eu-only cannot leave eu-west-1 (its only other region, eu-central-1, is cold: residency),
// global can (to us-east-1). Without --skip-blocked the plan is refused and says global could
// move; with it, only global moves, the router keeps eu-only exactly as it was, the outcome
// exits 3 with a verdict naming the rule and the next command, status says which classes the
// run covered, and resume after the router forgot touches global only.
func TestFailoverSkipBlockedMovesOnlyTheMovable(t *testing.T) {
	dir := faultDir(t)
	weights := filepath.Join(dir, "weights.json")
	before := fileRouterCells(t, weights)

	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "cold.json")
	if r.code != 3 || !strings.Contains(r.stdout, "REFUSED (residency)") ||
		!strings.Contains(r.stdout, "global can move without the blocked classes") ||
		!strings.Contains(r.stdout, "lifeboat failover plan --fleet fleet.yaml --region eu-west-1 --skip-blocked") {
		t.Fatalf("plan without --skip-blocked: exit %d\n%s", r.code, r.stdout)
	}

	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "cold.json", "--skip-blocked", "-o", "json")
	var plan struct {
		Complete bool     `json:"complete"`
		Classes  []string `json:"classes"`
		Blocked  []struct {
			Class, Rule, Reason string
		} `json:"blocked"`
		Steps []struct {
			Weights map[string]map[string]int `json:"weights"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, r.stdout)
	}
	if r.code != 3 || plan.Complete || len(plan.Classes) != 1 || plan.Classes[0] != "global" ||
		len(plan.Blocked) != 1 || plan.Blocked[0].Class != "eu-only" || plan.Blocked[0].Rule != "residency" || !strings.Contains(plan.Blocked[0].Reason, "eu-central-1 not warm") {
		t.Fatalf("--skip-blocked plan: exit %d %+v\n%s", r.code, plan, r.stdout)
	}
	for k, st := range plan.Steps {
		if _, ok := st.Weights["eu-only"]; ok {
			t.Fatalf("step %d of a plan that leaves eu-only untouched writes it: %v", k+1, st.Weights)
		}
	}
	if !strings.Contains(r.stderr, "VERDICT: PARTIAL, held for safety (residency)") {
		t.Fatalf("no verdict on stderr: %s", r.stderr)
	}

	// run without accepting: nothing changes (and the prompt is not the way round this)
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "cold.json", "--yes", "--reason", "t")
	if r.code != 3 || !sameCells(fileRouterCells(t, weights)["global"], before["global"]) {
		t.Fatalf("run without --skip-blocked: exit %d\n%s", r.code, r.stderr)
	}

	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "cold.json", "--skip-blocked", "--yes", "--reason", "INC-7 partial")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	verdict := lines[len(lines)-1]
	if r.code != 3 || !strings.HasPrefix(verdict, "VERDICT: PARTIAL, held for safety (residency)") ||
		!strings.Contains(verdict, "left untouched, as they are on the router: eu-only (residency:") ||
		!strings.Contains(verdict, "lifeboat failover plan --fleet fleet.yaml --region eu-west-1 --class eu-only") {
		t.Fatalf("partial run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "BLOCKED eu-only (residency), left untouched") || !strings.Contains(r.stderr, "eu-only (untouched)") {
		t.Errorf("the plan shown before the run does not name the blocked class:\n%s", r.stderr)
	}
	after := fileRouterCells(t, weights)
	if !sameCells(after["eu-only"], before["eu-only"]) {
		t.Fatalf("the blocked class changed on the router: %v → %v", before["eu-only"], after["eu-only"])
	}
	if want := map[string]string{"us-east-1": "100 ready", "eu-west-1": "0 maint"}; !sameCells(after["global"], want) {
		t.Fatalf("global after the partial run: %v, want %v", after["global"], want)
	}

	r = cli(t, nil, "failover", "status", "--fleet", "fleet.yaml")
	if !strings.Contains(r.stdout, "held: PARTIAL") || !strings.Contains(r.stdout, "classes: global") ||
		!strings.Contains(r.stdout, "left untouched: eu-only (residency)") {
		t.Fatalf("status of a partial run: exit %d\n%s", r.code, r.stdout)
	}

	// The router forgot the run (a reload: global back where it was) and someone moved eu-only
	// by hand: status reports drift of global only, and resume re-asserts global only.
	os.WriteFile(weights, []byte(`{"version": 1, "classes": {"eu-only": {"eu-west-1": {"weight": 70}, "eu-central-1": {"weight": 30}}, "global": {"us-east-1": {"weight": 60}, "eu-west-1": {"weight": 40}}}}`), 0o644)
	r = cli(t, nil, "failover", "status", "--fleet", "fleet.yaml")
	if r.code != 1 || !strings.Contains(r.stdout, "global/eu-west-1") || strings.Contains(r.stdout, "eu-only/") {
		t.Fatalf("status after the router forgot: exit %d\n%s", r.code, r.stdout)
	}
	r = cli(t, nil, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "cold.json", "--reason", "reload")
	if r.code != 3 || !strings.Contains(r.stdout, "re-asserted") && !strings.Contains(r.stderr, "re-asserted") {
		t.Fatalf("resume of a partial run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	after = fileRouterCells(t, weights)
	if want := map[string]string{"eu-west-1": "70 ready", "eu-central-1": "30 ready"}; !sameCells(after["eu-only"], want) {
		t.Fatalf("resume touched the class the run did not cover: eu-only %v, want %v", after["eu-only"], want)
	}
	if want := map[string]string{"us-east-1": "100 ready", "eu-west-1": "0 maint"}; !sameCells(after["global"], want) {
		t.Fatalf("resume did not re-assert global: %v, want %v", after["global"], want)
	}
}

// --class restricts a plan to the classes named; an unknown name is bad input with "did you
// mean"; a class restricted plan that reaches its target for them exits 0 and says so.
func TestFailoverClassSelection(t *testing.T) {
	dir := faultDir(t)
	weights := filepath.Join(dir, "weights.json")
	before := fileRouterCells(t, weights)
	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--class", "eu-onyl")
	if r.code != 2 || !strings.Contains(r.stderr, "(tenants: eu-only, global) (did you mean eu-only?)") {
		t.Fatalf("unknown class: exit %d\n%s", r.code, r.stderr)
	}
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--class", "global,glob", "--yes")
	if r.code != 2 || !strings.Contains(r.stderr, `class "glob"`) {
		t.Fatalf("unknown class in a comma list: exit %d\n%s", r.code, r.stderr)
	}
	// eu-only alone is blocked (eu-central-1 cold): refused, naming the rule
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "cold.json", "--class", "eu-only")
	if r.code != 3 || !strings.Contains(r.stdout, "VERDICT: REFUSED (residency): class eu-only") {
		t.Fatalf("--class eu-only, blocked: exit %d\n%s", r.code, r.stdout)
	}
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "cold.json", "--class", "global")
	if r.code != 0 || !strings.Contains(r.stdout, "VERDICT: evacuate eu-west-1 for global only: complete in 3 step(s)") {
		t.Fatalf("--class global: exit %d\n%s", r.code, r.stdout)
	}
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "cold.json", "--class", "global", "--yes", "--reason", "t")
	if r.code != 0 || !strings.Contains(r.stdout, "VERDICT: done: evacuate eu-west-1 reached its target for global only") {
		t.Fatalf("run --class global: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if after := fileRouterCells(t, weights); !sameCells(after["eu-only"], before["eu-only"]) {
		t.Fatalf("--class global changed eu-only: %v → %v", before["eu-only"], after["eu-only"])
	}
}

// A saved plan carries its class selection: run --plan applies it (no --skip-blocked needed
// again), refuses a --class that says otherwise (exit 2), and refuses (exit 3, nothing changed)
// when the classes that can move are no longer those it was saved with.
func TestFailoverSavedPlanWithClasses(t *testing.T) {
	dir := faultDir(t)
	weights := filepath.Join(dir, "weights.json")
	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "cold.json", "--skip-blocked", "--out", "partial.plan")
	if r.code != 3 || !strings.Contains(r.stderr, "Plan saved to partial.plan") {
		t.Fatalf("plan --skip-blocked --out: exit %d\n%s", r.code, r.stderr)
	}
	var saved struct {
		Plan struct {
			SkipBlocked bool     `json:"skip_blocked"`
			Classes     []string `json:"classes"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "partial.plan"))), &saved); err != nil || !saved.Plan.SkipBlocked || len(saved.Plan.Classes) != 1 {
		t.Fatalf("saved plan lacks its selection: %v %+v", err, saved)
	}
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--plan", "partial.plan", "--signals", "cold.json", "--class", "eu-only")
	if r.code != 2 || !strings.Contains(r.stderr, "was made for every class --skip-blocked, not --class eu-only") {
		t.Fatalf("run --plan with another --class: exit %d\n%s", r.code, r.stderr)
	}
	// eu-central-1 warmed up: eu-only could move now, so the saved partial plan no longer holds
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--plan", "partial.plan", "--signals", "warm.json")
	if r.code != 3 || !strings.Contains(r.stderr, "the classes that can move changed: saved global (blocked: eu-only), now eu-only, global") {
		t.Fatalf("run --plan, classes changed: exit %d\n%s", r.code, r.stderr)
	}
	if readFile(t, weights) != cliWeights {
		t.Fatal("a refused saved plan changed the router")
	}
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--plan", "partial.plan", "--signals", "cold.json", "--reason", "INC-8")
	if r.code != 3 || !strings.Contains(r.stdout, "3 step(s) applied") || !strings.Contains(r.stdout, "VERDICT: PARTIAL") {
		t.Fatalf("run --plan partial: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	after := fileRouterCells(t, weights)
	if want := map[string]string{"eu-west-1": "50 ready", "eu-central-1": "50 ready"}; !sameCells(after["eu-only"], want) {
		t.Fatalf("the saved partial plan changed eu-only: %v", after["eu-only"])
	}
}

// The same partial evacuation through a real HAProxy over its Runtime API, with real requests
// through its frontends: the blocked eu-only class keeps its 50/50 split between eu-west-1 and
// eu-central-1 (and never leaves the EU), global goes to us-east-1 only.
func TestFailoverSkipBlockedHAProxy(t *testing.T) {
	dir := faultDir(t)
	backends := map[string]string{}
	for _, region := range []string{"us-east-1", "eu-west-1", "eu-central-1"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, region) }), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		backends[region] = ln.Addr().String()
	}
	free := func() int {
		p, err := emulators.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	feEU, feGlobal := free(), free()
	cfg := fmt.Sprintf(`defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s

frontend fe_eu
  bind 127.0.0.1:%d
  default_backend be_eu

backend be_eu
  balance roundrobin
  server eu-west-1 %s weight 50
  server eu-central-1 %s weight 50

frontend fe_global
  bind 127.0.0.1:%d
  default_backend be_global

backend be_global
  balance roundrobin
  server us-east-1 %s weight 60
  server eu-west-1 %s weight 40
`, feEU, backends["eu-west-1"], backends["eu-central-1"], feGlobal, backends["us-east-1"], backends["eu-west-1"])
	h := emulators.StartHAProxy(t, cfg)
	fleet := strings.Replace(cliFleet, "router: {driver: file, path: weights.json}",
		fmt.Sprintf("router: {driver: haproxy, socket: %q, backends: {eu-only: be_eu, global: be_global}}", h.Socket), 1)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(fleet), 0o644)

	r := cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "cold.json", "--skip-blocked", "--yes", "--reason", "INC-9")
	if r.code != 3 || !strings.Contains(r.stdout, "VERDICT: PARTIAL, held for safety (residency)") {
		t.Fatalf("partial run on HAProxy: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "failover", "status", "--fleet", "fleet.yaml", "-o", "json")
	var st struct {
		Router struct {
			Weights map[string]map[string]int    `json:"weights"`
			States  map[string]map[string]string `json:"states"`
		} `json:"router"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, r.stdout)
	}
	if w := st.Router.Weights["eu-only"]; w["eu-west-1"] != 50 || w["eu-central-1"] != 50 {
		t.Fatalf("HAProxy's eu-only weights changed: %v", w)
	}
	if s := st.Router.States["eu-only"]; s["eu-west-1"] != "" && s["eu-west-1"] != "ready" {
		t.Fatalf("HAProxy's eu-only eu-west-1 is %q", s["eu-west-1"])
	}
	if w := st.Router.Weights["global"]; w["us-east-1"] != 100 || w["eu-west-1"] != 0 {
		t.Fatalf("HAProxy's global weights: %v", w)
	}
	count := func(port int, n int) map[string]int {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		out := map[string]int{}
		for i := 0; i < n; i++ {
			resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
			resp.Body.Close()
			out[string(b)]++
		}
		return out
	}
	if eu := count(feEU, 100); eu["eu-west-1"] < 40 || eu["eu-central-1"] < 40 || eu["us-east-1"] != 0 {
		t.Fatalf("eu-only traffic after the partial run: %v (want its 50/50 split, unchanged)", eu)
	}
	if g := count(feGlobal, 50); g["us-east-1"] != 50 {
		t.Fatalf("global traffic after the partial run: %v (want all on us-east-1)", g)
	}
}
