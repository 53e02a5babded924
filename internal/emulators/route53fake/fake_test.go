package route53fake

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
)

const zone = "ZFAKE1"

// client is the real SDK on the fake.
func client(t *testing.T, s *Server) *route53.Client {
	return route53.New(route53.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(s.Start(t)), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", ""),
	})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func change(action types.ChangeAction, r Record) types.Change {
	s := &types.ResourceRecordSet{Name: aws.String(r.Name), Type: types.RRType(r.Type), TTL: r.TTL, Weight: r.Weight}
	if r.SetIdentifier != "" {
		s.SetIdentifier = aws.String(r.SetIdentifier)
	}
	if r.HealthCheckId != "" {
		s.HealthCheckId = aws.String(r.HealthCheckId)
	}
	for _, v := range r.ResourceRecords {
		s.ResourceRecords = append(s.ResourceRecords, types.ResourceRecord{Value: aws.String(v.Value)})
	}
	return types.Change{Action: action, ResourceRecordSet: s}
}

func batch(t *testing.T, c *route53.Client, changes ...types.Change) (*route53.ChangeResourceRecordSetsOutput, error) {
	return c.ChangeResourceRecordSets(ctx(t), &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String("/hostedzone/" + zone),
		ChangeBatch: &types.ChangeBatch{Changes: changes}})
}

// The SDK parses the fake's refusals into its own typed errors: a CREATE of an existing record
// set and a DELETE that does not match in every field are *types.InvalidChangeBatch, and a batch
// with one bad change changes nothing.
func TestInvalidChangeBatchIsTyped(t *testing.T) {
	s := New()
	s.AddZone(zone)
	a := Weighted("api.example.com.", "A", "one", 10, 60, "192.0.2.1")
	s.Put(zone, a)
	c := client(t, s)

	b := Weighted("api.example.com.", "A", "two", 5, 60, "192.0.2.2")
	_, err := batch(t, c, change(types.ChangeActionCreate, b), change(types.ChangeActionCreate, a))
	var icb *types.InvalidChangeBatch
	if !errors.As(err, &icb) {
		t.Fatalf("CREATE of an existing record set: %v (%T), want *types.InvalidChangeBatch", err, err)
	}
	if len(icb.Messages) != 1 || !strings.Contains(icb.Messages[0], "already exists") {
		t.Fatalf("messages: %q", icb.Messages)
	}
	if got := s.Records(zone); len(got) != 1 {
		t.Fatalf("a refused batch changed the zone: %+v", got)
	}

	stale := a
	stale.TTL = aws.Int64(300)
	_, err = batch(t, c, change(types.ChangeActionDelete, stale))
	if !errors.As(err, &icb) || !strings.Contains(icb.Messages[0], "do not match") {
		t.Fatalf("DELETE with another TTL: %v, want InvalidChangeBatch (values do not match)", err)
	}
	hc := a
	hc.HealthCheckId = "abc"
	if _, err = batch(t, c, change(types.ChangeActionDelete, hc)); !errors.As(err, &icb) {
		t.Fatalf("DELETE with a health check the record lacks: %v", err)
	}
	missing := Weighted("api.example.com.", "A", "three", 1, 60, "192.0.2.3")
	if _, err = batch(t, c, change(types.ChangeActionDelete, missing)); !errors.As(err, &icb) || !strings.Contains(icb.Messages[0], "not found") {
		t.Fatalf("DELETE of a missing record set: %v", err)
	}

	// the exact DELETE and a CREATE in one batch: accepted, PENDING, then INSYNC
	next := a
	next.Weight = aws.Int64(20)
	out, err := batch(t, c, change(types.ChangeActionDelete, a), change(types.ChangeActionCreate, next))
	if err != nil {
		t.Fatal(err)
	}
	if out.ChangeInfo.Status != types.ChangeStatusPending || !strings.HasPrefix(aws.ToString(out.ChangeInfo.Id), "/change/") {
		t.Fatalf("change info: %+v", out.ChangeInfo)
	}
	got := s.Records(zone)
	if len(got) != 1 || *got[0].Weight != 20 {
		t.Fatalf("after the batch: %+v", got)
	}
	s.PendingPolls = 1
	for i, want := range []types.ChangeStatus{types.ChangeStatusPending, types.ChangeStatusInsync} {
		gc, err := c.GetChange(ctx(t), &route53.GetChangeInput{Id: out.ChangeInfo.Id})
		if err != nil {
			t.Fatal(err)
		}
		if gc.ChangeInfo.Status != want {
			t.Fatalf("poll %d: %s, want %s", i+1, gc.ChangeInfo.Status, want)
		}
	}
	if s.Upserts() != 0 {
		t.Fatalf("upserts %d", s.Upserts())
	}
	// an UPSERT is applied and counted
	up := a
	up.Weight = aws.Int64(3)
	if _, err := batch(t, c, change(types.ChangeActionUpsert, up)); err != nil {
		t.Fatal(err)
	}
	if s.Upserts() != 1 {
		t.Fatalf("upserts %d, want 1", s.Upserts())
	}
}

// Zone-wide rules: one name and type is all weighted or none; a CNAME shares its name with
// nothing; weights are 0..255; an unknown zone is NoSuchHostedZone.
func TestBatchRules(t *testing.T) {
	s := New()
	s.AddZone(zone)
	s.Put(zone, Weighted("api.example.com.", "A", "one", 10, 60, "192.0.2.1"))
	c := client(t, s)
	plain := Record{Name: "api.example.com.", Type: "A", TTL: aws.Int64(60), ResourceRecords: []ResourceRecord{{Value: "192.0.2.9"}}}
	cname := Weighted("api.example.com.", "CNAME", "two", 1, 60, "x.example.com.")
	heavy := Weighted("api.example.com.", "A", "two", 256, 60, "192.0.2.2")
	for name, ch := range map[string]types.Change{"mixed": change(types.ChangeActionCreate, plain), "cname": change(types.ChangeActionCreate, cname), "heavy": change(types.ChangeActionCreate, heavy)} {
		_, err := batch(t, c, ch)
		var icb *types.InvalidChangeBatch
		if !errors.As(err, &icb) {
			t.Errorf("%s: %v, want InvalidChangeBatch", name, err)
		}
	}
	_, err := c.ListResourceRecordSets(ctx(t), &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String("ZNONE")})
	var nz *types.NoSuchHostedZone
	if !errors.As(err, &nz) {
		t.Fatalf("unknown zone: %v, want NoSuchHostedZone", err)
	}
}

// Listing follows Route 53's order (labels reversed, then type, then set identifier) and pages
// by name, type and identifier.
func TestListOrderAndPaging(t *testing.T) {
	s := New()
	s.AddZone(zone)
	s.Put(zone,
		Weighted("b.example.com.", "A", "2", 1, 60, "192.0.2.1"),
		Weighted("api.example.com.", "AAAA", "1", 1, 60, "2001:db8::1"),
		Weighted("api.example.com.", "A", "2", 1, 60, "192.0.2.1"),
		Weighted("api.example.com.", "A", "1", 1, 60, "192.0.2.1"),
		Weighted("x.api.example.com.", "A", "1", 1, 60, "192.0.2.1"),
		Weighted("example.org.", "A", "1", 1, 60, "192.0.2.1"),
	)
	c := client(t, s)
	var got []string
	in := &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zone), StartRecordName: aws.String("api.example.com"), MaxItems: aws.Int32(2)}
	for pages := 0; ; pages++ {
		out, err := c.ListResourceRecordSets(ctx(t), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.ResourceRecordSets {
			got = append(got, aws.ToString(r.Name)+" "+string(r.Type)+" "+aws.ToString(r.SetIdentifier))
		}
		if !out.IsTruncated {
			break
		}
		in.StartRecordName, in.StartRecordType, in.StartRecordIdentifier = out.NextRecordName, out.NextRecordType, out.NextRecordIdentifier
	}
	want := []string{"api.example.com. A 1", "api.example.com. A 2", "api.example.com. AAAA 1", "x.api.example.com. A 1", "b.example.com. A 2", "example.org. A 1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("listed\n%q\nwant\n%q", got, want)
	}
}

// FailNext answers errors the SDK retries (a 503) and then serves again.
func TestFailNext(t *testing.T) {
	s := New()
	s.AddZone(zone)
	s.FailNext(503)
	c := route53.New(route53.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.Start(t)), RetryMaxAttempts: 2,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", "")})
	if _, err := c.ListResourceRecordSets(ctx(t), &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zone)}); err != nil {
		t.Fatalf("the retry after a 503: %v", err)
	}
	if s.Requests("ListResourceRecordSets") != 1 {
		t.Fatalf("served %d lists", s.Requests("ListResourceRecordSets"))
	}
}

// The demo's seed file loads: its zone and record sets, listed in Route 53's order.
func TestLoadFile(t *testing.T) {
	s := New()
	if err := s.LoadFile("testdata/seed.json"); err != nil {
		t.Fatal(err)
	}
	recs := s.Records("Z0123456789ABCDEFGHIJ")
	if len(recs) != 5 || recs[0].Name != "api.example.com." || recs[4].Name != "eu.api.example.com." || *recs[0].Weight != 30 {
		t.Fatalf("seeded %+v", recs)
	}
	bad := t.TempDir() + "/bad.json"
	os.WriteFile(bad, []byte(`{"zones": {"Z1": [{"Name": "a.", "Type": "A", "Wieght": 1}]}}`), 0o600)
	if err := s.LoadFile(bad); err == nil || !strings.Contains(err.Error(), "Wieght") {
		t.Fatalf("a misspelt field: %v", err)
	}
}
