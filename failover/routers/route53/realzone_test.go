package route53

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"lifeboat/fleet/router"
	"lifeboat/fleet/router/routertest"
)

// The conformance suite against a real hosted zone, when LIFEBOAT_ROUTE53_ZONE names one (its id)
// and the SDK's default chain has credentials allowed to change it (AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, ...). Its records go under a fresh subdomain
// lifeboat-test-<time>.<zone> and are deleted when the test ends. Each write waits for INSYNC,
// so the run takes minutes. LIFEBOAT_ROUTE53_ENDPOINT, optional, is the API's endpoint (a VPC
// endpoint; or cmd route53-fake's URL, to try the test itself: the fake takes any credentials).
func TestConformanceRealZone(t *testing.T) {
	zone := os.Getenv("LIFEBOAT_ROUTE53_ZONE")
	if zone == "" {
		t.Skip("set LIFEBOAT_ROUTE53_ZONE to a Route 53 hosted zone id, with AWS credentials in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE), to run the conformance suite against it")
	}
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" && os.Getenv("AWS_WEB_IDENTITY_TOKEN_FILE") == "" {
		t.Skip("LIFEBOAT_ROUTE53_ZONE is set but no AWS credentials are: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE")
	}
	api := os.Getenv("LIFEBOAT_ROUTE53_ENDPOINT")
	cfg := func(endpoint string, names map[string]string) Config {
		return Config{HostedZoneID: zone, Records: names, SetIdentifiers: testIDs, Classes: testClasses, Regions: testRegions,
			Endpoint: endpoint, Timeout: 20 * time.Second, PollInterval: 2 * time.Second, StepInterval: time.Minute}
	}
	probe := newDriver(t, cfg(api, testRecords(".invalid")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	hz, err := probe.client.GetHostedZone(ctx, &route53.GetHostedZoneInput{Id: aws.String(zone)})
	if err != nil {
		t.Fatalf("hosted zone %s: %v", zone, err)
	}
	domain := CanonicalName(aws.ToString(hz.HostedZone.Name))
	sub := fmt.Sprintf(".lifeboat-test-%x.%s", time.Now().UnixNano(), domain)
	names := testRecords(sub[:len(sub)-1])
	t.Logf("records under %s", sub[1:])
	t.Cleanup(func() { clearNames(t, probe, names) })
	// change applies a batch and waits for INSYNC.
	change := func(t *testing.T, changes ...types.Change) {
		out, err := probe.client.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(zone),
			ChangeBatch: &types.ChangeBatch{Changes: changes}})
		if err != nil {
			t.Fatal(err)
		}
		if err := probe.waitInSync(ctx, "test", aws.ToString(out.ChangeInfo.Id)); err != nil {
			t.Fatal(err)
		}
	}
	routertest.Run(t, routertest.Harness{
		Name: "route53 (real zone)",
		Open: func(t *testing.T) routertest.Setup {
			clearNames(t, probe, names)
			var cs []types.Change
			for class, vec := range testStart.Weights {
				for r, w := range vec {
					rec := Record{Name: names[class], Type: "A", SetIdentifier: setIdentifier(testIDs, r), Weight: int64(w), TTL: aws.Int64(30), Values: []string{addr[r]}}
					cs = append(cs, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: rec.sdk()})
				}
			}
			change(t, cs...)
			return routertest.Setup{
				Driver: newDriver(t, cfg(api, names)), State: testStart, Classes: testClasses,
				Tamper: func(t *testing.T) {
					recs := listNames(t, probe, names["eu-only"])
					i := slices.IndexFunc(recs, func(r Record) bool { return r.SetIdentifier == "eu-central-1" })
					n := recs[i]
					n.Weight = 7
					change(t, types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: recs[i].sdk()}, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: n.sdk()})
				},
				BreakTopology: func(t *testing.T) {
					rec := Record{Name: names["eu-only"], Type: "A", SetIdentifier: "us-east-1", TTL: aws.Int64(30), Values: []string{addr["us-east-1"]}}
					change(t, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: rec.sdk()})
				},
			}
		},
		Unreachable: func(t *testing.T) router.Driver { return newDriver(t, cfg("http://"+closedPort(t), names)) },
		Stalled: func(t *testing.T) router.Driver {
			return newDriver(t, cfg("http://"+routertest.SilentListener(t, "tcp"), names))
		},
	})
}

// listNames lists the record sets at a name.
func listNames(t *testing.T, d *Router, name string) []Record {
	t.Helper()
	var out []Record
	in := &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(d.cfg.HostedZoneID), StartRecordName: aws.String(name)}
	for {
		resp, err := d.client.ListResourceRecordSets(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range resp.ResourceRecordSets {
			if CanonicalName(aws.ToString(s.Name)) != name {
				return out
			}
			r, err := fromSDK(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		if !resp.IsTruncated {
			return out
		}
		in.StartRecordName, in.StartRecordType, in.StartRecordIdentifier = resp.NextRecordName, resp.NextRecordType, resp.NextRecordIdentifier
	}
}

// clearNames deletes every record set at the test's names.
func clearNames(t *testing.T, d *Router, names map[string]string) {
	t.Helper()
	var cs []types.Change
	for _, name := range names {
		for _, r := range listNames(t, d, name) {
			cs = append(cs, types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: r.sdk()})
		}
	}
	if len(cs) == 0 {
		return
	}
	if _, err := d.client.ChangeResourceRecordSets(context.Background(), &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(d.cfg.HostedZoneID),
		ChangeBatch: &types.ChangeBatch{Changes: cs}}); err != nil {
		t.Errorf("clean-up of %v: %v", names, err)
	}
}
