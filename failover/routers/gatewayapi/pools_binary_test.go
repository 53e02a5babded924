//go:build integration

package gatewayapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lifeboat/fleet/router"
	"lifeboat/internal/clitest"
	"lifeboat/internal/testbed"
)

// The failover commands through the binary on a gateway-api fleet whose regions are
// InferencePools (the mapping form of router.targets), on a real API server.

const poolRouterKeys = `  backends: {eu-only: route-eu, global: route-global}
  targets:
    us-east-1: {kind: InferencePool, name: pool-us-east-1}
    eu-west-1: {kind: InferencePool, name: pool-eu-west-1}
    eu-central-1: {kind: InferencePool, name: pool-eu-central-1}
    ap-southeast-1: {kind: InferencePool, name: pool-ap-southeast-1}`

// poolBinDir writes a fleet on the rig's pool routes with stepInterval between steps, and the
// signals (eu-west-1 calm long enough for a failback).
func (r *kubeRig) poolBinDir(t *testing.T, stepInterval string) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "state"), 0o700)
	keys := "  kubeconfig: " + strconvQuote(r.k.Kubeconfig) + "\n  namespace: " + r.ns + "\n  timeout: 5s\n" + poolRouterKeys
	fleet := strings.Replace(gwFleet(keys, "file://"+filepath.Join(dir, "state")), "step_interval: 10ms", "step_interval: "+stepInterval+", failback_dwell: 1ms", 1)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(fleet), 0o644)
	signals := strings.Replace(gwSignals, `"prefill_tokens_per_s": 6400},`, `"prefill_tokens_per_s": 6400, "calm_seconds": 600},`, 1)
	os.WriteFile(filepath.Join(dir, "signals.json"), []byte(signals), 0o644)
	return dir
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// journalHas says whether a run's journal under dir holds a record of this kind.
func journalHas(dir, kind string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "state", "failover", "runs", "*", "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var rec struct{ Kind string }
		if json.Unmarshal(b, &rec) == nil && rec.Kind == kind {
			return true
		}
	}
	return false
}

// poolResidency checks every version of a class's route: only the class's regions' pools, and
// region drained (weight 0, kept) in an earlier version than the one that removes it; it returns
// whether the region was removed at some point and came back after.
func poolResidency(t *testing.T, name, class, region string, history [][]string) (removed, back bool) {
	t.Helper()
	drained := -1
	for i, refs := range history {
		has := false
		for _, ref := range refs {
			pool, w, _ := strings.Cut(ref, ":")
			reg := strings.TrimPrefix(pool, "pool-")
			if !slices.Contains(testClasses[class], reg) {
				t.Fatalf("%s version %d routes %s to %s: %v", name, i, class, reg, refs)
			}
			if reg == region {
				has = true
				if w == "0" && drained < 0 {
					drained = i
				}
			}
		}
		switch {
		case !has && !removed:
			if drained < 0 {
				t.Fatalf("%s: %s removed at version %d before it was drained: %v", name, region, i, history)
			}
			removed = true
		case has && removed:
			back = true
		}
	}
	return removed, back
}

func TestGatewayAPIPoolBinaryEvacuateAndRestore(t *testing.T) {
	r := newKubeRig(t)
	r.startWith(t, poolServices())
	dir := r.poolBinDir(t, "10ms")
	stopEU, stopGlobal := r.watchRefs(t, "route-eu"), r.watchRefs(t, "route-global")
	code, out, errOut := lifeboat(t, dir, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "signals.json")
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = lifeboat(t, dir, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "signals.json", "--yes", "--reason", "test: pools")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "inferencepool "+r.ns+"/pool-eu-west-1") || !strings.Contains(errOut, "endpoint picker") {
		t.Fatalf("the pools' selectors and endpoint pickers are not reported:\n%s", errOut)
	}
	rs, err := r.driverWith(t, poolServices()).Read(testbed.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, class := range []string{"eu-only", "global"} {
		if rs.States.Get(class, "eu-west-1") != router.Maint {
			t.Fatalf("%s: eu-west-1 is %s after the evacuation", class, rs.States.Get(class, "eu-west-1"))
		}
	}
	if code, out, errOut = lifeboat(t, dir, "failover", "status", "--fleet", "fleet.yaml"); code != 0 || !strings.Contains(out, "evacuate eu-west-1") {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = lifeboat(t, dir, "failover", "restore", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "signals.json", "--hold-timeout", "20s", "--yes", "--reason", "test: back")
	if code != 0 {
		t.Fatalf("restore: exit %d\n%s\n%s", code, out, errOut)
	}
	for name, h := range map[string][][]string{"route-eu": stopEU(), "route-global": stopGlobal()} {
		class := map[string]string{"route-eu": "eu-only", "route-global": "global"}[name]
		if removed, back := poolResidency(t, name, class, "eu-west-1", h); !removed || !back {
			t.Fatalf("%s: eu-west-1 removed %v, back %v: %v", name, removed, back, h)
		}
	}
	rs, err = r.driverWith(t, poolServices()).Read(testbed.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if d := router.Diff(testStart, rs); len(d) > 0 {
		t.Fatalf("after restore the routes differ from where they started: %v", d)
	}
}

// A run killed (-9) after its first step is finished by resume in another process; abort then
// puts the pools' weights back; another client's edit in the middle of a run stops it with the
// edit kept.
func TestGatewayAPIPoolBinaryResumeAbortAndEdit(t *testing.T) {
	r := newKubeRig(t)
	r.startWith(t, poolServices())
	dir := r.poolBinDir(t, "1s")
	opts := clitest.Options{Dir: dir, Timeout: 90 * time.Second}
	p := clitest.Start(t, opts, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "signals.json", "--yes", "--reason", "test: killed")
	waitJournal(t, dir, "result")
	_ = p.Cmd.Process.Kill()
	p.Wait()
	stopEU := r.watchRefs(t, "route-eu")
	if code, out, errOut := lifeboat(t, dir, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "signals.json", "--reason", "test: resume"); code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := lifeboat(t, dir, "failover", "abort", "--fleet", "fleet.yaml", "--signals", "signals.json", "--yes", "--reason", "test: abort"); code != 0 {
		t.Fatalf("abort: exit %d\n%s\n%s", code, out, errOut)
	}
	poolResidency(t, "route-eu", "eu-only", "eu-west-1", stopEU())
	rs, err := r.driverWith(t, poolServices()).Read(testbed.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if d := router.Diff(testStart, rs); len(d) > 0 {
		t.Fatalf("after abort the routes differ from where they started: %v", d)
	}

	// another client's edit during a run: the run stops, and the edit stays
	dir2 := r.poolBinDir(t, "1s")
	p = clitest.Start(t, clitest.Options{Dir: dir2, Timeout: 90 * time.Second}, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "signals.json", "--yes", "--reason", "test: edited")
	waitJournal(t, dir2, "result")
	r.edit(t, "route-eu", func(rule map[string]any) {
		for _, b := range rule["backendRefs"].([]any) {
			b.(map[string]any)["weight"] = int64(7)
		}
	})
	res := p.Wait()
	if res.Code != 1 && res.Code != 3 {
		t.Fatalf("run edited by another client: exit %d, want 1 (held on the drift) or 3 (conflict)\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	if got := backendRefs(t, r.get(t, "route-eu")); !slices.Equal(got, []string{"pool-eu-central-1:7", "pool-eu-west-1:7"}) {
		t.Fatalf("the other client's edit was overwritten: %v\n%s", got, res.Stderr)
	}
	t.Logf("exit %d: %s", res.Code, lastLine(res.Stderr))
}

func waitJournal(t *testing.T, dir, kind string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !journalHas(dir, kind) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s record in the journal within a minute", kind)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
