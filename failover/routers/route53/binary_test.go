//go:build integration

package route53

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"lifeboat/internal/clitest"
	"lifeboat/internal/emulators/route53fake"
)

// The binary's failover commands on a fleet with driver route53, against the fake through the
// real SDK: plan, run (drain, then delete), status, restore in another process (the deleted
// records recreated exactly, from the journal), abort, resume, and a concurrent edit (exit 3,
// nothing overwritten). After every change batch the fake accepted, each class's record sets
// are checked: only eligible regions, never all at weight 0.

const binZone = "ZBINARYTEST0001"

var binNames = map[string]string{"eu-only": "eu.api.example.com.", "global": "api.example.com."}

var binEligible = map[string][]string{
	"eu-only": {"eu-west-1", "eu-central-1"},
	"global":  {"us-east-1", "eu-west-1", "ap-southeast-1"},
}

// binRecords are the zone's weighted sets: plain A records, one with a health check and two
// values, and one alias — each must come back exactly as it was.
func binRecords() []route53fake.Record {
	euw := route53fake.Weighted(binNames["eu-only"], "A", "eu-west-1", 50, 0, "192.0.2.11", "192.0.2.12")
	euw.HealthCheckId = "hc-euw1-0001"
	glEuw := route53fake.Record{Name: binNames["global"], Type: "A", SetIdentifier: "eu-west-1", Weight: ptr(int64(30)),
		AliasTarget: &route53fake.AliasTarget{HostedZoneId: "Z32O12XQLNTSW2", DNSName: "euw1-lb.elb.amazonaws.com.", EvaluateTargetHealth: true}}
	return []route53fake.Record{
		euw,
		route53fake.Weighted(binNames["eu-only"], "A", "eu-central-1", 50, 0, "192.0.2.21"),
		route53fake.Weighted(binNames["global"], "A", "us-east-1", 40, 0, "192.0.2.31"),
		glEuw,
		route53fake.Weighted(binNames["global"], "A", "ap-southeast-1", 30, 0, "192.0.2.41"),
	}
}

const binSignals = `{"weights": {"eu-only": {"eu-west-1": 50, "eu-central-1": 50}, "global": {"us-east-1": 40, "eu-west-1": 30, "ap-southeast-1": 30}},
 "regions": {
 "us-east-1": {"warm": true, "healthy": true, "queue_wait_ms": 20, "running": 0, "prefill_tokens_per_s": 9600},
 "eu-west-1": {"warm": true, "healthy": true, "queue_wait_ms": 30, "running": 0, "prefill_tokens_per_s": 6400, "calm_seconds": 600},
 "eu-central-1": {"warm": true, "healthy": true, "queue_wait_ms": 10, "running": 0, "prefill_tokens_per_s": 6400},
 "ap-southeast-1": {"warm": true, "healthy": true, "queue_wait_ms": 10, "running": 0, "prefill_tokens_per_s": 4800}}}`

func binFleet(endpoint, state, stepInterval string) string {
	return fmt.Sprintf(`model: {name: llama-demo, manifest: m.json}
regions:
  us-east-1: {replica: ./r, capacity: {replicas: 6, prefill_tokens_per_s: 8000}}
  eu-west-1: {replica: ./r, capacity: {replicas: 4, prefill_tokens_per_s: 8000}}
  eu-central-1: {replica: ./r, capacity: {replicas: 4, prefill_tokens_per_s: 8000}}
  ap-southeast-1: {replica: ./r, capacity: {replicas: 3, prefill_tokens_per_s: 8000}}
tenants:
  eu-only: [eu-west-1, eu-central-1]
  global: [us-east-1, eu-west-1, ap-southeast-1]
router:
  driver: route53
  hosted_zone_id: %s
  endpoint: %s
  poll_interval: 10ms
  timeout: 5s
  records:
    eu-only: %s
    global: %s
failover: {step_percent: 25, step_interval: %s, spill_cap_percent: 60, drain_timeout: 1s, failback_dwell: 1ms}
state: %q
`, binZone, endpoint, binNames["eu-only"], binNames["global"], stepInterval, state)
}

type binRig struct {
	fake *route53fake.Server
	dir  string
	env  []string
}

func newBinRig(t *testing.T, stepInterval string) *binRig {
	t.Helper()
	f := route53fake.New()
	f.AddZone(binZone)
	f.Put(binZone, binRecords()...)
	url := f.Start(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "state"), 0o700)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(binFleet(url, "file://"+filepath.Join(dir, "state"), stepInterval)), 0o644)
	os.WriteFile(filepath.Join(dir, "signals.json"), []byte(binSignals), 0o644)
	return &binRig{fake: f, dir: dir, env: []string{
		"AWS_ACCESS_KEY_ID=AKIDLIFEBOATTEST", "AWS_SECRET_ACCESS_KEY=s3cr3t-never-printed", "AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true",
	}}
}

func (r *binRig) run(t *testing.T, args ...string) clitest.Result {
	t.Helper()
	res := clitest.Run(t, clitest.Options{Dir: r.dir, Env: r.env, Timeout: 90 * time.Second}, args...)
	if strings.Contains(res.Stdout+res.Stderr, "s3cr3t") || strings.Contains(res.Stdout+res.Stderr, "AKIDLIFEBOATTEST") {
		t.Fatalf("lifeboat %v printed a credential:\n%s\n%s", args, res.Stdout, res.Stderr)
	}
	return res
}

func (r *binRig) succeed(t *testing.T, args ...string) clitest.Result {
	t.Helper()
	res := r.run(t, args...)
	if res.Code != 0 {
		t.Fatalf("lifeboat %s: exit %d\n%s\n%s", strings.Join(args, " "), res.Code, res.Stdout, res.Stderr)
	}
	return res
}

// zone is the zone's record sets by class → region.
func (r *binRig) zone() map[string]map[string]route53fake.Record {
	out := map[string]map[string]route53fake.Record{}
	for _, rec := range r.fake.Records(binZone) {
		for class, name := range binNames {
			if rec.Name == name {
				if out[class] == nil {
					out[class] = map[string]route53fake.Record{}
				}
				out[class][rec.SetIdentifier] = rec
			}
		}
	}
	return out
}

func recJSON(rec route53fake.Record) string { b, _ := json.Marshal(rec); return string(b) }

// replay applies the fake's accepted change batches, in order, to the starting records and
// checks residency after each: every record of a class is an eligible region's, and a class
// with records never has them all at weight 0. It returns, per region of eu-only and global, the
// index of the first batch after which its record had weight 0, and after which it was gone.
func replay(t *testing.T, start []route53fake.Record, changes []route53fake.ChangeRecord) (zeroAt, goneAt map[string]int) {
	t.Helper()
	zone := map[route53fake.Key]route53fake.Record{}
	for _, rec := range start {
		rec = rec.Normalize()
		zone[rec.Key()] = rec
	}
	zeroAt, goneAt = map[string]int{}, map[string]int{}
	for i, ch := range changes {
		for _, c := range ch.Changes {
			rec := c.ResourceRecordSet.Normalize()
			switch c.Action {
			case "DELETE":
				delete(zone, rec.Key())
			case "CREATE":
				zone[rec.Key()] = rec
			default:
				t.Fatalf("change %d: action %s (the driver never sends anything but DELETE and CREATE)", i, c.Action)
			}
		}
		for class, name := range binNames {
			n, zero := 0, 0
			for _, rec := range zone {
				if rec.Name != name {
					continue
				}
				n++
				if !slices.Contains(binEligible[class], rec.SetIdentifier) {
					t.Fatalf("after change %d: class %s has a record of %s, outside its regions", i, class, rec.SetIdentifier)
				}
				if rec.Weight != nil && *rec.Weight == 0 {
					zero++
					if _, ok := zeroAt[class+"/"+rec.SetIdentifier]; !ok {
						zeroAt[class+"/"+rec.SetIdentifier] = i
					}
				}
			}
			if n > 0 && zero == n {
				t.Fatalf("after change %d: class %s has every record at weight 0 (Route 53 would spread it over all of them)", i, class)
			}
			for _, reg := range binEligible[class] {
				if _, ok := zone[route53fake.Key{Name: name, Type: "A", SetIdentifier: reg}]; !ok {
					if _, seen := goneAt[class+"/"+reg]; !seen {
						goneAt[class+"/"+reg] = i
					}
				}
			}
		}
	}
	return zeroAt, goneAt
}

func TestRoute53BinaryEvacuateAndRestore(t *testing.T) {
	r := newBinRig(t, "10ms")
	before := r.zone()
	plan := r.succeed(t, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "signals.json")
	if !strings.Contains(plan.Stdout, "eu-west-1") {
		t.Fatalf("plan does not name eu-west-1:\n%s", plan.Stdout)
	}
	if n := len(r.fake.Changes()); n != 0 {
		t.Fatalf("plan wrote %d change batches", n)
	}
	run := r.succeed(t, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "signals.json", "--yes", "--reason", "test: evacuate")
	if !strings.Contains(run.Stderr, "reading every region's signals (recorded, from signals.json; no region is probed)") {
		t.Fatalf("run --signals does not say its signals come from the file:\n%s", run.Stderr)
	}
	evac := r.fake.Changes()
	zeroAt, goneAt := replay(t, binRecords(), evac)
	for _, cell := range []string{"eu-only/eu-west-1", "global/eu-west-1"} {
		z, zok := zeroAt[cell]
		g, gok := goneAt[cell]
		if !zok || !gok || g <= z {
			t.Fatalf("%s: drained (weight 0) after change %d (%v), deleted after change %d (%v): want drained first, then deleted\n%+v", cell, z, zok, g, gok, evac)
		}
	}
	after := r.zone()
	for class := range binNames {
		if _, ok := after[class]["eu-west-1"]; ok {
			t.Fatalf("%s: eu-west-1's record is still there after the evacuation: %s", class, recJSON(after[class]["eu-west-1"]))
		}
	}
	st := r.succeed(t, "failover", "status", "--fleet", "fleet.yaml")
	t.Logf("status:\n%s", st.Stdout)

	// restore in another process: the deleted records come back from the journal, exactly
	r.succeed(t, "failover", "restore", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "signals.json", "--hold-timeout", "20s", "--yes", "--reason", "test: restore")
	_, _ = replay(t, binRecords(), r.fake.Changes())
	back := r.zone()
	for class := range binNames {
		for reg, want := range before[class] {
			if got, ok := back[class][reg]; !ok || recJSON(got) != recJSON(want) {
				t.Fatalf("%s/%s after restore:\n got %s\nwant %s", class, reg, recJSON(got), recJSON(want))
			}
		}
	}
	if n := r.fake.Upserts(); n != 0 {
		t.Fatalf("the driver sent %d UPSERTs", n)
	}
}

// journalHas says whether the run's journal holds a record of this kind.
func (r *binRig) journalHas(kind string) bool {
	files, _ := filepath.Glob(filepath.Join(r.dir, "state", "failover", "runs", "*", "*.json"))
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

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A run killed (-9) after its first step is finished by `failover resume` in another process;
// `failover abort` then puts every record back exactly as it was, the deleted ones recreated
// from the journal.
func TestRoute53BinaryResumeThenAbort(t *testing.T) {
	r := newBinRig(t, "1s")
	before := r.zone()
	p := clitest.Start(t, clitest.Options{Dir: r.dir, Env: r.env, Timeout: 90 * time.Second},
		"failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "signals.json", "--yes", "--reason", "test: killed")
	waitFor(t, "journaled step result", func() bool { return r.journalHas("result") })
	_ = p.Cmd.Process.Kill()
	p.Wait()
	r.succeed(t, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "signals.json", "--reason", "test: resume")
	_, _ = replay(t, binRecords(), r.fake.Changes())
	for class := range binNames {
		if _, ok := r.zone()[class]["eu-west-1"]; ok {
			t.Fatalf("%s: eu-west-1 still has a record after the resumed evacuation", class)
		}
	}
	r.succeed(t, "failover", "abort", "--fleet", "fleet.yaml", "--signals", "signals.json", "--yes", "--reason", "test: abort")
	_, _ = replay(t, binRecords(), r.fake.Changes())
	back := r.zone()
	for class := range binNames {
		for reg, want := range before[class] {
			if got, ok := back[class][reg]; !ok || recJSON(got) != recJSON(want) {
				t.Fatalf("%s/%s after abort:\n got %s\nwant %s", class, reg, recJSON(got), recJSON(want))
			}
		}
	}
	if n := r.fake.Upserts(); n != 0 {
		t.Fatalf("the driver sent %d UPSERTs", n)
	}
}

// Another writer's edit that lands between the driver's read and its change batch makes the
// batch's DELETE miss: Route 53 refuses the whole batch, the run stops with exit 3, and the other
// writer's record is left as it made it.
func TestRoute53BinaryConcurrentEditStops(t *testing.T) {
	r := newBinRig(t, "10ms")
	var edited atomic.Bool // set on the fake's handler goroutine
	r.fake.SetBeforeChange(func(n int) {
		if n == 2 && edited.CompareAndSwap(false, true) { // the run's second batch: someone else's edit lands just before it
			r.fake.Edit(binZone, func(rec route53fake.Record) bool {
				return rec.Name == binNames["global"] && rec.SetIdentifier == "us-east-1"
			}, func(rec *route53fake.Record) { rec.Weight = ptr(int64(41)) })
		}
	})
	res := r.run(t, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "signals.json", "--yes", "--reason", "test: race")
	if res.Code != 3 {
		t.Fatalf("run with a concurrent edit: exit %d, want 3\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	if !edited.Load() {
		t.Fatal("the run made fewer than two change batches: the edit never raced it")
	}
	if w := r.zone()["global"]["us-east-1"].Weight; w == nil || *w != 41 {
		t.Fatalf("the other writer's weight was overwritten: %v", w)
	}
	// one batch per step: the refused batch carried both classes' changes, and none of them landed
	if n := len(r.fake.Changes()); n != 1 {
		t.Fatalf("%d change batches accepted, want only the first step's: a refused step must leave every class as it was", n)
	}
	if !strings.Contains(res.Stdout+res.Stderr, "nothing was overwritten") {
		t.Fatalf("the refusal does not say nothing was overwritten:\n%s\n%s", res.Stdout, res.Stderr)
	}
	_, _ = replay(t, binRecords(), r.fake.Changes())
	t.Logf("%s", res.Stderr)
}

func TestMain(m *testing.M) { os.Exit(clitest.Main(m)) }
