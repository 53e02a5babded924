//go:build integration

package drills

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
	"lifeboat/providers"
)

// haproxyBackends names each class's HAProxy backend.
var haproxyBackends = map[string]string{"eu-only": "be_eu", "global": "be_global"}

// haproxyFront is a real HAProxy in front of a test fleet's candidates.
type haproxyFront struct {
	socket    string            // its Runtime API
	frontends map[string]string // class → the frontend's URL
	ports     map[string]int    // region → the port its server points at (its candidate's)
	base      router.RouterState
}

// startHAProxy starts a real HAProxy in front of the regions' candidates — one backend per class
// holding only its eligible regions at base's weights, each server named by region and pointing
// at the port that region's candidate will listen on, one frontend per class, and X-Served-By
// naming the server that answered. Without haproxy the test skips, or fails under
// LIFEBOAT_REQUIRE_EMULATORS=1.
func startHAProxy(t *testing.T, regions []regionSpec, base router.RouterState) *haproxyFront {
	t.Helper()
	free := func() int {
		p, err := emulators.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	h := &haproxyFront{frontends: map[string]string{}, ports: map[string]int{}, base: base}
	for _, r := range regions {
		if !r.archive {
			h.ports[r.name] = free()
		}
	}
	var b strings.Builder
	b.WriteString("defaults\n  mode http\n  timeout connect 2s\n  timeout client 30s\n  timeout server 30s\n\n")
	for _, class := range slices.Sorted(mapsKeys(base.Weights)) {
		fe := free()
		h.frontends[class] = fmt.Sprintf("http://127.0.0.1:%d", fe)
		fmt.Fprintf(&b, "frontend fe_%s\n  bind 127.0.0.1:%d\n  default_backend %s\n\n", class, fe, haproxyBackends[class])
		fmt.Fprintf(&b, "backend %s\n  balance roundrobin\n  http-response set-header %s %%[srv_name]\n", haproxyBackends[class], fleet.FrontendServedBy)
		for _, region := range slices.Sorted(mapsKeys(base.Weights[class])) {
			fmt.Fprintf(&b, "  server %s 127.0.0.1:%d weight %d\n", region, h.ports[region], base.Weights[class][region])
		}
		b.WriteString("\n")
	}
	h.socket = emulators.StartHAProxy(t, b.String()).Socket
	return h
}

// options make the rig's fleet drive this HAProxy over its Runtime API and send the drill's
// traffic through its frontends.
func (h *haproxyFront) options() rigOptions {
	var fe []string
	for _, class := range slices.Sorted(mapsKeys(h.frontends)) {
		fe = append(fe, fmt.Sprintf("%s: %q", class, h.frontends[class]))
	}
	rtr := fmt.Sprintf("{driver: haproxy, socket: %q, backends: {eu-only: be_eu, global: be_global}, frontends: {%s}}", h.socket, strings.Join(fe, ", "))
	return rigOptions{router: rtr, ports: h.ports, baseline: h.base}
}

// TestDrillEmulators is the full drill on the S3, GCS and Azure emulators (versitygw,
// fake-gcs-server, Azurite) with a real HAProxy as the router, every game-day fault injected
// (router-unreachable on the calls to HAProxy's Runtime API): each is detected, recovery time
// comes from the journal (kept in S3), every synthetic request went through HAProxy and landed
// where the weights say (the eu-only class never outside the EU), HAProxy is back at the
// baseline, the reports are well-formed and the HTML renders in chromium, and nothing is left
// behind.
func TestDrillEmulators(t *testing.T) {
	s3b, gcsb, azb := testbed.S3Backend(t), testbed.GCSBackend(t), testbed.AzureBackend(t)
	o := testbed.StoreOptions()
	o.S3Credentials = credentials.NewStaticCredentialsProvider(s3b.S3.AccessKey, s3b.S3.SecretKey, "")
	o.AzureConnectionString = azb.Az.ConnectionString(azb.Az.Key)
	open := func(ctx context.Context, url string) (providers.Store, error) { return providers.Open(ctx, url, o) }
	spec := func(name string, b *testbed.Backend) regionSpec {
		prefix := testbed.FreshPrefix("drill-" + name)
		var url string
		switch b.Name {
		case "s3":
			url = b.S3.URL(testbed.Bucket, prefix)
		case "gcs":
			url = "gs://" + testbed.Bucket + "/" + prefix
		case "azure":
			url = b.Az.URL(testbed.Bucket, prefix)
		}
		return regionSpec{name: name, store: b.Open(t, prefix, nil), url: url}
	}
	regions := []regionSpec{
		spec("us-east-1", s3b), spec("us-west-2", s3b), spec("eu-west-1", azb), spec("eu-central-1", gcsb), spec("ap-southeast-1", azb),
	}
	// the global class is served from eu-central-1 too: after the evacuation of eu-west-1 it is
	// split over two receivers, and the traffic shows HAProxy following the split
	split := router.RouterState{Weights: baseline.Weights.Clone(), States: router.States{}}
	split.Weights["global"] = map[string]int{"us-east-1": 40, "us-west-2": 0, "eu-west-1": 40, "eu-central-1": 20, "ap-southeast-1": 0}
	ro := startHAProxy(t, regions, split).options()
	ro.state = s3b.S3.URL(testbed.Bucket, testbed.FreshPrefix("drill-state"))
	rig := newDrillRig(t, regions, open, ro)
	d := rig.drill(t, strings.Replace(faultDrill, "traffic: {requests: 6,", "traffic: {requests: 40,", 1))
	rep, err := rig.runner(d).Run(drillCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatalf("drill failed:\n%s", dumpSteps(rep))
	}
	if !strings.HasPrefix(rep.Router, "haproxy:") {
		t.Fatalf("router %q", rep.Router)
	}
	for _, f := range rep.Faults {
		if !f.Injected || !f.Detected {
			t.Errorf("fault %s not detected: %+v", f.Name, f)
		}
	}
	// on S3 the corrupted shard is caught by the quick check as well (native checksum), on GCS
	// the missing tokenizer by the listing
	for _, v := range rep.Verify[0].Replicas {
		if (v.Region == "us-east-1" || v.Region == "eu-central-1") && len(v.Problems) != 1 {
			t.Errorf("%s: problems %v", v.Region, v.Problems)
		}
	}
	if rep.SLA.RecoverySeconds == nil || rep.SLA.Recovered == nil {
		t.Fatalf("no recovery time: %+v", rep.SLA)
	}
	checkThroughRouter(t, rep)
	// the failback left HAProxy's runtime state at the baseline it was configured with
	hr, err := fleet.OpenRouter(rig.fleet)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := hr.Read(drillCtx(t))
	if err != nil || !rs.Weights.Equal(split.Weights) {
		t.Fatalf("HAProxy after the drill: %v %v", err, router.Diff(split, rs))
	}
	checkNothingLeft(t, rig, rep)
	checkReports(t, rep)
	// the replicas are as the manifest says again
	for _, r := range regions {
		res := verifyQuick(t, rig, r.store)
		if res != "OK" {
			t.Errorf("%s after the drill: %s", r.name, res)
		}
	}
}

// checkThroughRouter: every request of the drill went through the router's frontend and
// answered; none of the eu-only class landed outside the EU or on the lost region after its
// evacuation; and the traffic step's requests of each class are spread over the regions as the
// router's weights at that moment say (HAProxy's weighted round robin is deterministic: within
// 3 + 10 % of the class's count, which allows for the sampler's requests interleaving).
func checkThroughRouter(t *testing.T, rep *Report) {
	t.Helper()
	eu := map[string]bool{"eu-west-1": true, "eu-central-1": true}
	n := 0
	for _, r := range rep.Requests {
		if r.Via == "" || !r.OK || !r.Eligible {
			t.Fatalf("request %+v: not through the router, failed or outside its class", r)
		}
		if r.Class == "eu-only" && !eu[r.Region] {
			t.Fatalf("an eu-only request landed in %s", r.Region)
		}
		n++
	}
	at := stepOf(rep, StepTraffic).Offset
	weights := map[string]map[string]int{} // the last weights journaled before the traffic step
	for _, w := range rep.Weights {
		if w.Offset <= at {
			if weights[w.Class] == nil {
				weights[w.Class] = map[string]int{}
			}
			weights[w.Class][w.Region] = w.Weight
			if w.State != "ready" {
				weights[w.Class][w.Region] = 0
			}
		}
	}
	for class, ws := range weights {
		got, total := map[string]int{}, 0
		for _, r := range rep.Requests {
			if r.Class == class && r.Phase == "traffic" {
				got[r.Region]++
				total++
			}
		}
		sum := 0
		for _, w := range ws {
			sum += w
		}
		if total == 0 || sum == 0 || ws[rep.Lost] != 0 {
			t.Fatalf("class %s: %d traffic requests, weights %v", class, total, ws)
		}
		for region, w := range ws {
			want := float64(total) * float64(w) / float64(sum)
			if d := math.Abs(float64(got[region]) - want); d > 3+0.1*float64(total) {
				t.Errorf("class %s: %s got %d of %d requests, the weights %v say %.1f", class, region, got[region], total, ws, want)
			}
		}
		t.Logf("class %s: weights %v, requests %v", class, ws, got)
	}
	if n == 0 {
		t.Fatal("no requests")
	}
}

// A fleet file that sends the eu-only class in at the global frontend: the drill's traffic goes
// through HAProxy as the fleet says, sees eu-only requests land outside the EU and on regions
// the router gives the class no weight, and fails the traffic step.
func TestDrillTrafficThroughMiswiredRouter(t *testing.T) {
	regions := fileRegions(t)
	h := startHAProxy(t, regions, baseline)
	h.frontends["eu-only"] = h.frontends["global"]
	rig := newDrillRig(t, regions, fileOpen, h.options())
	d := rig.drill(t, `name: miswired
fleet: fleet.yaml
lose: eu-west-1
steps: [boot, traffic, teardown]
traffic: {requests: 8, max_tokens: 2, timeout: 10s}
`)
	rep, err := rig.runner(d).Run(drillCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	st := stepOf(rep, StepTraffic)
	if rep.OK || st.Status != Failed || !strings.Contains(st.Detail, "eu-only request(s) landed outside [eu-central-1 eu-west-1]") ||
		!strings.Contains(st.Detail, "eu-only request(s) landed where the router gives eu-only no weight: us-east-1") {
		t.Fatalf("a miswired frontend passed the traffic check:\n%s", dumpSteps(rep))
	}
	checkNothingLeft(t, rig, rep)
}

// A hostile frontend — one that answers with an error body holding newlines and a forged line,
// with an endless X-Served-By header, or with one that names no region — is a failed request
// whose error is one bounded line, not text the report repeats verbatim (nor a crash of the drill).
func TestDrillTrafficFromHostileFrontend(t *testing.T) {
	regions := fileRegions(t)
	h := startHAProxy(t, regions, baseline)
	body := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, "busy\nOK forged line\n"+strings.Repeat("x", 400))
	}))
	t.Cleanup(body.Close)
	var calls atomic.Int32
	header := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The first answer's header is endless; the others name no region (and the drill has no
		// boot step, so only the fleet file's endpoints can match it).
		served := strings.Repeat("y", 300)
		if calls.Add(1) == 1 {
			served = strings.Repeat("y", 200<<10)
		}
		w.Header().Set(fleet.FrontendServedBy, served)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(header.Close)
	h.frontends["eu-only"], h.frontends["global"] = body.URL, header.URL
	rig := newDrillRig(t, regions, fileOpen, h.options())
	d := rig.drill(t, `name: hostile
fleet: fleet.yaml
lose: eu-west-1
steps: [traffic]
traffic: {requests: 2, max_tokens: 2, timeout: 10s}
`)
	rep, err := rig.runner(d).Run(drillCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rep.Requests {
		seen[r.Class] = true
		if r.OK || r.Error == "" || strings.ContainsAny(r.Error, "\n\r") || len(r.Error) > 400 {
			t.Errorf("%s request from a hostile frontend: ok=%v, error (%d bytes) %q", r.Class, r.OK, len(r.Error), r.Error)
		}
	}
	if !seen["eu-only"] || !seen["global"] || rep.OK {
		t.Fatalf("want failed requests of both classes:\n%s", dumpSteps(rep))
	}
}
