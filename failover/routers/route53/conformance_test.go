package route53

import (
	"net"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"lifeboat/fleet/router"
	"lifeboat/fleet/router/routertest"
	"lifeboat/internal/emulators/route53fake"
)

const testZone = "Z0123456789ABCDEFGHIJ"

// The test fleet: an EU-only class and a global one over four regions; eu-west-1's records carry
// the set identifier euw1.
var (
	testClasses = map[string][]string{
		"eu-only": {"eu-west-1", "eu-central-1"},
		"global":  {"us-east-1", "eu-west-1", "ap-southeast-1"},
	}
	testRegions = []string{"ap-southeast-1", "eu-central-1", "eu-west-1", "us-east-1"}
	testIDs     = map[string]string{"eu-west-1": "euw1"}
)

func testRecords(suffix string) map[string]string {
	return map[string]string{"eu-only": "eu.api" + suffix + ".", "global": "api" + suffix + "."}
}

var testStart = router.RouterState{Weights: router.Weights{
	"eu-only": {"eu-west-1": 51, "eu-central-1": 49},
	"global":  {"us-east-1": 41, "eu-west-1": 33, "ap-southeast-1": 26},
}, States: router.States{}}

// addr is a region's test address.
var addr = map[string]string{"us-east-1": "192.0.2.1", "eu-west-1": "192.0.2.2", "eu-central-1": "192.0.2.3", "ap-southeast-1": "192.0.2.4"}

// seedRecords are the start state's records: an A record per region, plus an AAAA for
// eu-west-1 in the global class (a region of several types), and a health check on us-east-1.
func seedRecords(names map[string]string) []route53fake.Record {
	var out []route53fake.Record
	for class, vec := range testStart.Weights {
		for r, w := range vec {
			rec := route53fake.Weighted(names[class], "A", setIdentifier(testIDs, r), int64(w), 30, addr[r])
			if r == "us-east-1" {
				rec.HealthCheckId = "abcdef01-2345-6789-abcd-ef0123456789"
			}
			out = append(out, rec)
			if class == "global" && r == "eu-west-1" {
				out = append(out, route53fake.Weighted(names[class], "AAAA", setIdentifier(testIDs, r), int64(w), 30, "2001:db8::2"))
			}
		}
	}
	return out
}

func testConfig(endpoint string, names map[string]string) Config {
	return Config{
		HostedZoneID: testZone, Records: names, SetIdentifiers: testIDs, Classes: testClasses, Regions: testRegions,
		Endpoint: endpoint, Timeout: 5 * time.Second, PollInterval: 5 * time.Millisecond, StepInterval: time.Minute,
		PageSize: 2, Attempts: 2,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKEFAKEFAKE", "fake-secret-never-printed", ""),
	}
}

func newDriver(t testing.TB, c Config) *Router {
	t.Helper()
	d, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// fakeRig is one fake with the test zone seeded.
type fakeRig struct {
	fake  *route53fake.Server
	url   string
	names map[string]string
}

func newFakeRig(t testing.TB) *fakeRig {
	f := route53fake.New()
	f.PendingPolls = 2
	f.AddZone(testZone)
	names := testRecords(".example.com")
	// neighbours the driver must leave alone: another name below, one sorted just before
	f.Put(testZone, route53fake.Weighted("a.api.example.com.", "A", "x", 1, 30, "192.0.2.99"),
		route53fake.Record{Name: "api.example.co.", Type: "TXT", TTL: ptr(int64(60)), ResourceRecords: []route53fake.ResourceRecord{{Value: `"hello"`}}})
	f.Put(testZone, seedRecords(names)...)
	return &fakeRig{fake: f, url: f.Start(t), names: names}
}

func ptr[T any](v T) *T { return &v }

// closedPort is a loopback address nothing listens on.
func closedPort(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}

// The route53 driver, on the real SDK, against the fake on loopback.
func TestConformance(t *testing.T) {
	var rigs []*fakeRig
	routertest.Run(t, routertest.Harness{
		Name: "route53",
		Open: func(t *testing.T) routertest.Setup {
			rig := newFakeRig(t)
			rigs = append(rigs, rig)
			return routertest.Setup{
				Driver: newDriver(t, testConfig(rig.url, rig.names)), State: testStart, Classes: testClasses,
				Tamper: func(t *testing.T) {
					n := rig.fake.Edit(testZone, func(r route53fake.Record) bool {
						return r.Name == rig.names["eu-only"] && r.SetIdentifier == "eu-central-1"
					}, func(r *route53fake.Record) { r.Weight = ptr(int64(7)) })
					if n != 1 {
						t.Fatalf("tamper edited %d records", n)
					}
				},
				BreakTopology: func(t *testing.T) {
					// us-east-1 in the EU-only name, at weight 0: still answered when the rest is unhealthy
					rig.fake.Put(testZone, route53fake.Weighted(rig.names["eu-only"], "A", "us-east-1", 0, 30, addr["us-east-1"]))
				},
			}
		},
		Unreachable: func(t *testing.T) router.Driver {
			return newDriver(t, testConfig("http://"+closedPort(t), testRecords(".example.com")))
		},
		Stalled: func(t *testing.T) router.Driver {
			return newDriver(t, testConfig("http://"+routertest.SilentListener(t, "tcp"), testRecords(".example.com")))
		},
	})
	upserts := 0
	for _, r := range rigs {
		upserts += r.fake.Upserts()
		// the neighbours are untouched
		for _, rec := range r.fake.Records(testZone) {
			if rec.Name == "a.api.example.com." && *rec.Weight != 1 || rec.Name == "api.example.co." && rec.ResourceRecords[0].Value != `"hello"` {
				t.Errorf("a neighbouring record changed: %+v", rec)
			}
		}
	}
	if upserts != 0 {
		t.Fatalf("the driver sent %d UPSERTs over the conformance run", upserts)
	}
	t.Logf("%d fakes, 0 UPSERTs", len(rigs))
}
