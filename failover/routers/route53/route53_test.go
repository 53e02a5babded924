package route53

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lifeboat/fleet/router"
	"lifeboat/internal/emulators/route53fake"
)

func tctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func mustRead(t *testing.T, d *Router) (router.RouterState, router.RouterVersion) {
	t.Helper()
	rs, v, err := d.ReadVersion(tctx(t))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return rs, v
}

func recordsAt(f *route53fake.Server, name string) []route53fake.Record {
	var out []route53fake.Record
	for _, r := range f.Records(testZone) {
		if r.Name == name {
			out = append(out, r)
		}
	}
	return out
}

// Reading follows pages of two record sets (global's four sets span two pages), maps
// set identifiers to regions, and reads a region's A and AAAA as one weight.
func TestReadPages(t *testing.T) {
	rig := newFakeRig(t)
	d := newDriver(t, testConfig(rig.url, rig.names))
	rs, _ := mustRead(t, d)
	if df := router.Diff(testStart, rs); len(df) > 0 {
		t.Fatalf("read %v: %v", rs.Weights.Text(), df)
	}
	if n := rig.fake.Requests("ListResourceRecordSets"); n != 3 {
		t.Fatalf("read two classes in %d list calls with maxitems 2, want 3 (global: two pages; eu-only: one)", n)
	}
	var k Kept
	if err := json.Unmarshal(rs.Kept["global"]["eu-west-1"], &k); err != nil || len(k.Records) != 2 || k.Records[0].Type != "A" || k.Records[1].Type != "AAAA" || k.Records[0].SetIdentifier != "euw1" {
		t.Fatalf("kept of global/eu-west-1: %s (%v)", rs.Kept["global"]["eu-west-1"], err)
	}
	if got := rs.States.Get("global", "us-east-1"); got != router.Ready {
		t.Fatalf("us-east-1 reads %s", got)
	}
}

// Another writer's edit between this driver's read and its write: the exact DELETE no longer
// matches, Route 53 refuses the whole batch, and the driver says ErrRouterConflict without
// retrying; the other writer's record is untouched.
func TestConcurrentEditIsConflict(t *testing.T) {
	rig := newFakeRig(t)
	d := newDriver(t, testConfig(rig.url, rig.names))
	_, v := mustRead(t, d)
	// the other writer changes only the TTL: the weights read the same, the record does not
	rig.fake.Edit(testZone, func(r route53fake.Record) bool {
		return r.Name == rig.names["eu-only"] && r.SetIdentifier == "euw1"
	}, func(r *route53fake.Record) { r.TTL = ptr(int64(20)) })
	before := rig.fake.Records(testZone)
	want := testStart.Clone()
	want.Weights["eu-only"] = map[string]int{"eu-west-1": 10, "eu-central-1": 90}
	changes := rig.fake.Requests("ChangeResourceRecordSets")
	err := d.ApplyIf(tctx(t), want, v, func() error { return nil })
	if !errors.Is(err, router.ErrRouterConflict) || !strings.Contains(err.Error(), "nothing was overwritten") {
		t.Fatalf("ApplyIf after another's edit: %v, want ErrRouterConflict", err)
	}
	t.Logf("conflict: %v", err)
	if n := rig.fake.Requests("ChangeResourceRecordSets") - changes; n != 1 {
		t.Fatalf("%d batches sent: want exactly one, never retried", n)
	}
	after := rig.fake.Records(testZone)
	if len(after) != len(before) {
		t.Fatalf("records changed: %d → %d", len(before), len(after))
	}
	for i := range before {
		if !route53fake.Equal(before[i], after[i]) {
			t.Fatalf("record %d changed: %+v → %+v", i, before[i], after[i])
		}
	}
}

// A write returns only after GetChange said INSYNC: the fake holds each change PENDING for
// three polls.
func TestWaitsForInSync(t *testing.T) {
	rig := newFakeRig(t)
	rig.fake.PendingPolls = 3
	d := newDriver(t, testConfig(rig.url, rig.names))
	want := testStart.Clone()
	want.Weights["eu-only"] = map[string]int{"eu-west-1": 20, "eu-central-1": 80}
	if err := d.Apply(tctx(t), want); err != nil {
		t.Fatal(err)
	}
	ch := rig.fake.Changes()
	if len(ch) != 1 {
		t.Fatalf("%d changes, want one batch for eu-only", len(ch))
	}
	if ch[0].Status != "INSYNC" || ch[0].Polls != 4 {
		t.Fatalf("returned with the change %s after %d polls, want INSYNC after 4", ch[0].Status, ch[0].Polls)
	}
	// the batch: DELETE + CREATE per region, nothing else
	var acts []string
	for _, c := range ch[0].Changes {
		acts = append(acts, c.Action+" "+c.ResourceRecordSet.SetIdentifier)
	}
	if got := strings.Join(acts, ","); got != "DELETE eu-central-1,CREATE eu-central-1,DELETE euw1,CREATE euw1" {
		t.Fatalf("batch %s", got)
	}
	if notes := d.Notes(); len(notes) == 0 || !strings.Contains(notes[len(notes)-1], "INSYNC") {
		t.Fatalf("notes %q", notes)
	}
}

// A change still PENDING when the context ends is ErrRouterUnreachable naming the change.
func TestPendingUntilDeadline(t *testing.T) {
	rig := newFakeRig(t)
	rig.fake.PendingPolls = 1 << 30
	d := newDriver(t, testConfig(rig.url, rig.names))
	mustRead(t, d)
	want := testStart.Clone()
	want.Weights["eu-only"] = map[string]int{"eu-west-1": 20, "eu-central-1": 80}
	c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := d.Apply(c, want)
	if !errors.Is(err, router.ErrRouterUnreachable) || !strings.Contains(err.Error(), "PENDING") || !strings.Contains(err.Error(), rig.fake.Changes()[0].ID) {
		t.Fatalf("apply with a change that stays PENDING: %v", err)
	}
}

// Throttling and 5xx answers, after the SDK's few attempts, are ErrRouterUnreachable.
func TestThrottlingIsUnreachable(t *testing.T) {
	rig := newFakeRig(t)
	d := newDriver(t, testConfig(rig.url, rig.names))
	rig.fake.FailNext(400, 400) // Throttling
	if _, err := d.Read(tctx(t)); !errors.Is(err, router.ErrRouterUnreachable) {
		t.Fatalf("throttled read: %v", err)
	}
	rig.fake.FailNext(500, 503)
	_, err := d.Read(tctx(t))
	if !errors.Is(err, router.ErrRouterUnreachable) {
		t.Fatalf("read on 5xx: %v", err)
	}
	if strings.Contains(err.Error(), "fake-secret-never-printed") || strings.Contains(err.Error(), "AKIDFAKE") {
		t.Fatalf("credentials in %q", err)
	}
	if _, err := d.Read(tctx(t)); err != nil {
		t.Fatalf("read once the fake answers: %v", err)
	}
}

// An all-zero class is refused before anything is written: Route 53 would answer every record.
func TestAllZeroRefused(t *testing.T) {
	rig := newFakeRig(t)
	d := newDriver(t, testConfig(rig.url, rig.names))
	want := testStart.Clone()
	want.Weights["eu-only"] = map[string]int{"eu-west-1": 0, "eu-central-1": 0}
	err := d.Apply(tctx(t), want)
	if err == nil || !strings.Contains(err.Error(), "weight 0") {
		t.Fatalf("all-zero apply: %v", err)
	}
	if n := rig.fake.Requests("ChangeResourceRecordSets"); n != 0 {
		t.Fatalf("%d batches sent", n)
	}
	// withdrawing one and draining the other leaves one record at 0: refused too
	want.States.Set("eu-only", "eu-west-1", router.Maint)
	if err := d.Apply(tctx(t), want); err == nil {
		t.Fatal("a class left with one record at weight 0 was written")
	}
	// withdrawing both is allowed: no record, no answer
	want.States.Set("eu-only", "eu-central-1", router.Maint)
	if err := d.Apply(tctx(t), want); err != nil {
		t.Fatalf("withdrawing every region: %v", err)
	}
	if got := recordsAt(rig.fake, rig.names["eu-only"]); len(got) != 0 {
		t.Fatalf("left %+v", got)
	}
}

// Record sets the driver cannot map are refused by name: a simple record, a latency record, a
// weighted record of no region, a region's types at different weights, a TTL longer than a step.
func TestUnmappableRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		put  func(names map[string]string) route53fake.Record
		want string
	}{
		{"simple", func(n map[string]string) route53fake.Record {
			return route53fake.Record{Name: n["global"], Type: "TXT", TTL: ptr(int64(30)), ResourceRecords: []route53fake.ResourceRecord{{Value: `"x"`}}}
		}, "is a simple record, not a weighted one"},
		{"latency", func(n map[string]string) route53fake.Record {
			return route53fake.Record{Name: n["global"], Type: "TXT", SetIdentifier: "lat", Region: "us-east-1", TTL: ptr(int64(30)), ResourceRecords: []route53fake.ResourceRecord{{Value: `"x"`}}}
		}, "is a latency record"},
		{"no region", func(n map[string]string) route53fake.Record {
			return route53fake.Weighted(n["global"], "A", "mars-1", 5, 30, "192.0.2.77")
		}, "is no region's"},
		{"two weights", func(n map[string]string) route53fake.Record {
			return route53fake.Weighted(n["global"], "AAAA", "us-east-1", 5, 30, "2001:db8::1")
		}, "different weights"},
		{"ttl", func(n map[string]string) route53fake.Record {
			return route53fake.Weighted(n["eu-only"], "A", "eu-central-1", 49, 300, addr["eu-central-1"])
		}, "TTL 5m0s, longer than failover.step_interval 1m0s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rig := newFakeRig(t)
			rig.fake.Put(testZone, c.put(rig.names))
			d := newDriver(t, testConfig(rig.url, rig.names))
			_, err := d.Read(tctx(t))
			if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, router.ErrRouterUnreachable) {
				t.Fatalf("read: %v, want an error saying %q", err, c.want)
			}
			if err := d.Apply(tctx(t), testStart); err == nil {
				t.Fatal("apply on an unmappable router succeeded")
			}
			if n := rig.fake.Requests("ChangeResourceRecordSets"); n != 0 {
				t.Fatalf("%d batches sent", n)
			}
			t.Logf("%v", err)
		})
	}
}

// A desired state giving a record to a region outside the class is refused (and nothing written).
func TestDesiredOutsideClassRefused(t *testing.T) {
	rig := newFakeRig(t)
	d := newDriver(t, testConfig(rig.url, rig.names))
	want := testStart.Clone()
	want.Weights["eu-only"]["us-east-1"] = 5
	if err := d.Apply(tctx(t), want); !errors.Is(err, router.ErrRouterTopology) {
		t.Fatalf("apply: %v, want ErrRouterTopology", err)
	}
	if n := rig.fake.Requests("ChangeResourceRecordSets"); n != 0 {
		t.Fatalf("%d batches sent", n)
	}
}

// Withdrawn by one process and brought back by another: the record sets are recreated from the
// journal's Kept exactly as they were (TTL, values, health check, alias target with
// EvaluateTargetHealth), and without Kept the second process refuses.
func TestRecreateFromKept(t *testing.T) {
	rig := newFakeRig(t)
	name := rig.names["global"]
	// us-east-1 is an alias with a health check; eu-west-1 has A and AAAA
	rig.fake.Remove(testZone, route53fake.Key{Name: name, Type: "A", SetIdentifier: "us-east-1"})
	alias := route53fake.Record{Name: name, Type: "A", SetIdentifier: "us-east-1", Weight: ptr(int64(41)), HealthCheckId: "abcdef01-2345-6789-abcd-ef0123456789",
		AliasTarget: &route53fake.AliasTarget{HostedZoneId: "Z35SXDOTRQ7X7K", DNSName: "lb-1.us-east-1.elb.amazonaws.com.", EvaluateTargetHealth: true}}
	rig.fake.Put(testZone, alias)
	original := recordsAt(rig.fake, name)

	d1 := newDriver(t, testConfig(rig.url, rig.names))
	rs, _ := mustRead(t, d1)
	kept := rs.Kept.Clone()
	out := rs.Clone()
	for _, r := range []string{"us-east-1", "eu-west-1"} {
		out.Weights["global"][r] = 0
		out.States.Set("global", r, router.Maint)
	}
	out.Weights["global"]["ap-southeast-1"] = 100
	if err := d1.Apply(tctx(t), out); err != nil {
		t.Fatal(err)
	}
	if got := recordsAt(rig.fake, name); len(got) != 1 {
		t.Fatalf("after withdraw: %+v", got)
	}
	back := testStart.Clone()
	// another process: nothing in memory
	d2 := newDriver(t, testConfig(rig.url, rig.names))
	err := d2.Apply(tctx(t), back)
	if err == nil || !strings.Contains(err.Error(), "no journaled record to recreate") || !strings.Contains(err.Error(), "global") {
		t.Fatalf("coming back without Kept: %v", err)
	}
	// a Kept that is not the region's is refused
	bad := kept.Clone()
	bad["global"]["us-east-1"] = bad["global"]["eu-west-1"]
	back.Kept = bad
	if err := d2.Apply(tctx(t), back); err == nil || !strings.Contains(err.Error(), "set identifier") {
		t.Fatalf("coming back with another region's Kept: %v", err)
	}
	back.Kept = kept
	if err := d2.Apply(tctx(t), back); err != nil {
		t.Fatal(err)
	}
	got := recordsAt(rig.fake, name)
	if len(got) != len(original) {
		t.Fatalf("recreated %d record sets, had %d", len(got), len(original))
	}
	for i := range original {
		if !route53fake.Equal(original[i], got[i]) {
			a, _ := json.Marshal(original[i])
			b, _ := json.Marshal(got[i])
			t.Fatalf("record %d recreated differently:\n%s\n%s", i, a, b)
		}
	}
	if rig.fake.Upserts() != 0 {
		t.Fatalf("%d UPSERTs", rig.fake.Upserts())
	}
}

// The driver's String names the zone and nothing secret.
func TestString(t *testing.T) {
	d := newDriver(t, testConfig("http://127.0.0.1:1", testRecords(".example.com")))
	if d.String() != "route53:"+testZone || d.MaxWeight() != 255 || !d.ZeroWeightIsDrain() {
		t.Fatalf("%s %d %v", d, d.MaxWeight(), d.ZeroWeightIsDrain())
	}
}

// A batch whose answer is a 5xx is sent once, never retried by the SDK (a retry of a batch that
// landed would fail its DELETEs and read as another's edit): ErrRouterUnreachable, for the
// read-back to settle.
func TestChangeNotRetried(t *testing.T) {
	rig := newFakeRig(t)
	d := newDriver(t, testConfig(rig.url, rig.names))
	_, v := mustRead(t, d)
	want := testStart.Clone()
	want.Weights["eu-only"] = map[string]int{"eu-west-1": 20, "eu-central-1": 80}
	rig.fake.FailNext(503, 503)
	err := d.ApplyIf(tctx(t), want, v, func() error { return nil })
	if !errors.Is(err, router.ErrRouterUnreachable) {
		t.Fatalf("apply answered 503: %v", err)
	}
	if n := rig.fake.Failed(); n != 1 {
		t.Fatalf("the batch was sent %d times", n)
	}
}

// A drained region is written at weight 0 whatever weight it carries, and an eligible region the
// desired state does not name is withdrawn, as on the other drivers.
func TestDrainAndUnnamed(t *testing.T) {
	rig := newFakeRig(t)
	d := newDriver(t, testConfig(rig.url, rig.names))
	want := router.RouterState{Weights: router.Weights{"global": {"us-east-1": 60, "eu-west-1": 40}}, States: router.States{}}
	want.States.Set("global", "eu-west-1", router.Drain)
	if err := d.Apply(tctx(t), want); err != nil {
		t.Fatal(err)
	}
	rs, _ := mustRead(t, d)
	if rs.Weights["global"]["eu-west-1"] != 0 || rs.States.Get("global", "eu-west-1") != router.Drain ||
		rs.States.Get("global", "ap-southeast-1") != router.Maint || rs.Weights["global"]["us-east-1"] != 60 {
		t.Fatalf("read %s %v", rs.Weights.Text(), rs.States)
	}
	if rs.Weights["eu-only"]["eu-west-1"] != 51 {
		t.Fatalf("a class desired did not name changed: %s", rs.Weights.Text())
	}
	if notes := strings.Join(d.Notes(), "\n"); !strings.Contains(notes, "global: eu-west-1 is drained at weight 0 but still answered when every non-zero record is unhealthy") {
		t.Fatalf("notes %q", notes)
	}
}

// An endpoint whose answer has no end is refused once past router.MaxBody, not read into memory.
func TestAnswerBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		io.WriteString(w, `<?xml version="1.0"?><ListResourceRecordSetsResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><ResourceRecordSets>`)
		pad := strings.Repeat("<!-- padding padding padding padding padding padding padding -->", 1024)
		for i := 0; i < (router.MaxBody/len(pad))+2; i++ {
			if _, err := io.WriteString(w, pad); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	d := newDriver(t, testConfig(srv.URL, testRecords(".example.com")))
	_, err := d.Read(tctx(t))
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("read of an endless answer: %v", err)
	}
}

// Another writer's edit of a region this write does not change still refuses the batch: the
// unchanged record sets are in it too (deleted and created as read), so the write is conditional
// on the whole class as read, and the other's edit stays.
func TestEditOfAnUnchangedRegionIsConflict(t *testing.T) {
	rig := newFakeRig(t)
	d := newDriver(t, testConfig(rig.url, rig.names))
	_, v := mustRead(t, d)
	rig.fake.Edit(testZone, func(r route53fake.Record) bool {
		return r.Name == rig.names["global"] && r.SetIdentifier == "ap-southeast-1"
	}, func(r *route53fake.Record) { r.Weight = ptr(int64(9)) })
	want := testStart.Clone()
	want.Weights["global"]["us-east-1"] = 45 // ap-southeast-1 and eu-west-1 as they were read
	err := d.ApplyIf(tctx(t), want, v, func() error { return nil })
	if !errors.Is(err, router.ErrRouterConflict) {
		t.Fatalf("ApplyIf after an edit of a region it does not change: %v, want ErrRouterConflict", err)
	}
	rs, _ := mustRead(t, d)
	if rs.Weights["global"]["ap-southeast-1"] != 9 || rs.Weights["global"]["us-east-1"] != 41 {
		t.Fatalf("after the refused batch: %s", rs.Weights.Text())
	}
	// and on the version just read, the same write goes through, the unchanged regions as they are
	_, v = mustRead(t, d)
	want.Weights["global"]["ap-southeast-1"] = 9
	if err := d.ApplyIf(tctx(t), want, v, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	rs, _ = mustRead(t, d)
	if df := router.Diff(want, rs); len(df) > 0 {
		t.Fatalf("after the write: %v", df)
	}
}

// Without credentials anywhere in the SDK's default chain nothing is sent, and the error is a
// configuration problem, not the router being unreachable.
func TestNoCredentials(t *testing.T) {
	rig := newFakeRig(t)
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	c := testConfig(rig.url, rig.names)
	c.Credentials = nil
	d := newDriver(t, c)
	_, err := d.Read(tctx(t))
	if err == nil || errors.Is(err, router.ErrRouterUnreachable) || !strings.Contains(err.Error(), "credentials") {
		t.Fatalf("read without credentials: %v", err)
	}
	if n := rig.fake.Requests("ListResourceRecordSets"); n != 0 {
		t.Fatalf("%d requests sent without credentials", n)
	}
	t.Logf("%v", err)
}

// A server that ignores StartRecordName and answers the whole zone from its first record (a
// naive fake; Route 53 never does) is read right: the records of the class's name only, from
// wherever they are in the listing.
func TestReadWhenTheServerIgnoresTheStart(t *testing.T) {
	rig := newFakeRig(t)
	rig.fake.IgnoreStart = true
	d := newDriver(t, testConfig(rig.url, rig.names))
	rs, _ := mustRead(t, d)
	if df := router.Diff(testStart, rs); len(df) > 0 {
		t.Fatalf("read %v: %v", rs.Weights.Text(), df)
	}
}
