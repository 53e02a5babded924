package route53

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lifeboat/fleet"
)

func parseFleet(t *testing.T, file string) (*fleet.Fleet, error) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fleets", file))
	if err != nil {
		t.Fatal(err)
	}
	return fleet.Parse(b, "fleet.yaml")
}

// A fleet's router section decodes into the driver's configuration: names canonical, the zone
// id without its /hostedzone/ prefix, the fleet's step_interval and timeout carried to the driver.
func TestFleetConfig(t *testing.T) {
	f, err := parseFleet(t, "ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, ok := f.Router.Config.(*FleetConfig)
	if !ok {
		t.Fatalf("config %T", f.Router.Config)
	}
	if c.HostedZoneID != "Z0123456789ABCDEFGHIJ" || c.Records["eu-only"] != "eu.api.example.com." || c.Records["global"] != "api.example.com." ||
		c.SetIdentifiers["eu-west-1"] != "euw1" || c.PollInterval != 2*time.Second || c.Endpoint != "http://127.0.0.1:9" {
		t.Fatalf("config %+v", c)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFAKE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-never-printed")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	d, err := fleet.OpenRouter(f)
	if err != nil {
		t.Fatal(err)
	}
	rt := d.(*Router)
	if rt.String() != "route53:Z0123456789ABCDEFGHIJ" || rt.cfg.StepInterval != 30*time.Second || rt.cfg.Timeout != 3*time.Second || rt.region["euw1"] != "eu-west-1" {
		t.Fatalf("driver %s %+v", rt, rt.cfg)
	}
	if id := strings.Join(c.Identity(), " "); strings.Contains(id, "secret") || !strings.Contains(id, "Z0123456789ABCDEFGHIJ") {
		t.Fatalf("identity %q", id)
	}
}

// Every mistake is reported with the fleet file's line and the field.
func TestFleetConfigErrors(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"missing-class.yaml", `fleet.yaml:14: router.records: class "global" has no record name`},
		{"unknown-class.yaml", `fleet.yaml:16: router.records.globl: tenant class "globl" is not defined under tenants (did you mean global?)`},
		{"unknown-region.yaml", `fleet.yaml:17: router.set_identifiers.eu-west-2: region "eu-west-2" is not defined under regions (did you mean eu-west-1?)`},
		{"no-zone.yaml", `fleet.yaml:11: router.hosted_zone_id: required with driver route53`},
		{"bad-zone.yaml", `fleet.yaml:12: router.hosted_zone_id: "z-lower" is not a hosted zone id`},
		{"bad-name.yaml", `fleet.yaml:14: router.records.eu-only: "*.api.example.com" is not a DNS name`},
		{"shared-name.yaml", `fleet.yaml:15: router.records.global: api.example.com. is also class eu-only's record name`},
		{"shared-id.yaml", `fleet.yaml:17: router.set_identifiers.us-east-1: set identifier "us-east-1" is also region eu-west-1's`},
		{"bad-poll.yaml", `fleet.yaml:16: router.poll_interval: want a positive duration`},
		{"unknown-key.yaml", `fleet.yaml:16: router.hosted_zone`},
		{"backends.yaml", `fleet.yaml:13: router.backends: not used by driver route53`},
	} {
		t.Run(c.file, func(t *testing.T) {
			_, err := parseFleet(t, c.file)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v\nwant %q", err, c.want)
			}
		})
	}
}
