package route53

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/yamlnode"
)

// Driver is the driver's name: router: {driver: route53}.
const Driver = "route53"

// The driver's registration.
func init() {
	fleet.RegisterDriver(fleet.DriverKind{Name: Driver, Order: 6, Config: func() fleet.DriverConfig { return &FleetConfig{} }})
}

var _ fleet.DriverConfig = (*FleetConfig)(nil)

// FleetConfig is the driver's part of a fleet file:
//
//	router:
//	  driver: route53
//	  hosted_zone_id: Z0123456789ABCDEFGHIJ
//	  records:                            # class → the DNS name of its weighted record sets
//	    eu-only: eu.api.example.com.
//	    global: api.example.com.
//	  endpoint: https://…                 # optional: the Route 53 API endpoint (VPC endpoint, tests)
//	  set_identifiers: {eu-west-1: euw1}  # optional: region → SetIdentifier, when not the region's name
//	  poll_interval: 5s                   # optional: GetChange polling interval (default 5s)
//
// Credentials come from the AWS SDK's default chain (environment, shared config and credentials
// files, SSO, the instance's or task's role); none go in the fleet file. The records' TTL is
// checked against failover.step_interval when they are read (see Config.StepInterval).
type FleetConfig struct {
	HostedZoneID   string            `json:"hosted_zone_id"`
	Records        map[string]string `json:"records"`
	Endpoint       string            `json:"endpoint,omitempty"`
	SetIdentifiers map[string]string `json:"set_identifiers,omitempty"`
	PollInterval   time.Duration     `json:"poll_interval,omitempty"`

	lines map[string]int // records.<class>, set_identifiers.<region> → line
}

// DefaultPollInterval is poll_interval when unset: the SDK's own ResourceRecordSetsChanged waiter
// first waits 30 s, far longer than a change takes to reach INSYNC.
const DefaultPollInterval = 5 * time.Second

var (
	zoneIDRE = regexp.MustCompile(`^[A-Z0-9]{1,32}$`)
	labelRE  = regexp.MustCompile(`^([a-z0-9_]|[a-z0-9_][a-z0-9_-]{0,61}[a-z0-9_])$`)
)

// CanonicalName is a DNS name lower-cased with a trailing dot, as Route 53 lists names.
func CanonicalName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// validName: a DNS name of letters, digits, '-' and '_' labels (at most 255 bytes); Route 53's
// escapes and wildcards are not taken.
func validName(s string) bool {
	if len(s) > 255 || s == "." {
		return false
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if !labelRE.MatchString(l) {
			return false
		}
	}
	return true
}

// ZoneID is a hosted zone id without the "/hostedzone/" prefix Route 53 answers with.
func ZoneID(s string) string { return strings.TrimPrefix(strings.TrimSpace(s), "/hostedzone/") }

// Keys decodes hosted_zone_id, records, endpoint, set_identifiers and poll_interval.
func (c *FleetConfig) Keys(d *fleet.Decoder) yamlnode.Fields {
	if c.lines == nil {
		c.lines = map[string]int{}
	}
	return yamlnode.Fields{
		"hosted_zone_id": func(n *yaml.Node, at string) {
			v := ZoneID(d.Str(n, at, true))
			if v != "" && !zoneIDRE.MatchString(v) {
				d.Errf(n.Line, at, "%q is not a hosted zone id (upper-case letters and digits, such as Z0123456789ABCDEFGHIJ)", v)
				return
			}
			c.HostedZoneID = v
		},
		"records": func(n *yaml.Node, at string) {
			c.Records = map[string]string{}
			d.EachKey(n, at, func(k, v *yaml.Node, at string) {
				c.lines["records."+k.Value] = k.Line
				s := d.Str(v, at, true)
				if s == "" {
					return
				}
				name := CanonicalName(s)
				if !validName(name) {
					d.Errf(v.Line, at, "%q is not a DNS name (labels of letters, digits, '-' and '_'; no wildcard)", s)
					return
				}
				c.Records[k.Value] = name
			})
		},
		"endpoint": func(n *yaml.Node, at string) { c.Endpoint = d.HTTPURL(n, at) },
		"set_identifiers": func(n *yaml.Node, at string) {
			c.SetIdentifiers = map[string]string{}
			d.EachKey(n, at, func(k, v *yaml.Node, at string) {
				c.lines["set_identifiers."+k.Value] = k.Line
				s := d.Str(v, at, true)
				if s == "" {
					return
				}
				if len(s) > 128 || strings.TrimSpace(s) != s {
					d.Errf(v.Line, at, "%q is not a SetIdentifier (1 to 128 characters, no surrounding space)", s)
					return
				}
				c.SetIdentifiers[k.Value] = s
			})
		},
		"poll_interval": func(n *yaml.Node, at string) {
			v := d.Duration(n, at)
			if v <= 0 {
				d.Errf(n.Line, at, "want a positive duration such as 5s")
				return
			}
			c.PollInterval = v
		},
	}
}

// Check: a hosted zone; every tenant class has a record name, of its own; every record and
// set identifier names a class or region of the fleet; no two regions share a set identifier.
func (c *FleetConfig) Check(d *fleet.Decoder, f *fleet.Fleet) {
	d.RequireRouter(f, c.HostedZoneID != "", "hosted_zone_id", "the Route 53 hosted zone holding the records")
	if f.Router.Backends != nil {
		d.Errf(d.Line("router.backends"), "router.backends", "not used by driver route53: each class's DNS name goes under router.records")
	}
	classes := slices.Sorted(maps.Keys(f.Tenants))
	for _, class := range slices.Sorted(maps.Keys(c.Records)) {
		if _, ok := f.Tenants[class]; !ok {
			d.Errf(c.lines["records."+class], "router.records."+class, "tenant class %q is not defined under tenants%s", class, fleet.DidYouMean(class, classes))
		}
	}
	if c.Records == nil {
		d.RequireRouter(f, false, "records", "each tenant class's DNS name (class: name), whose weighted records carry its regions")
	} else {
		for _, class := range classes {
			if c.Records[class] == "" && c.lines["records."+class] == 0 {
				d.Errf(d.Line("router.records"), "router.records", "class %q has no record name: each class needs its own DNS name, whose weighted records are only its eligible regions", class)
			}
		}
	}
	seen := map[string]string{}
	for _, class := range slices.Sorted(maps.Keys(c.Records)) {
		if other, dup := seen[c.Records[class]]; dup {
			d.Errf(c.lines["records."+class], "router.records."+class, "%s is also class %s's record name: a name's records carry only one class's regions", c.Records[class], other)
		}
		seen[c.Records[class]] = class
	}
	regions := f.RegionNames()
	for _, r := range slices.Sorted(maps.Keys(c.SetIdentifiers)) {
		if f.Regions[r] == nil {
			d.Errf(c.lines["set_identifiers."+r], "router.set_identifiers."+r, "region %q is not defined under regions%s", r, fleet.DidYouMean(r, regions))
		}
	}
	owner := map[string]string{}
	for _, r := range regions {
		id := setIdentifier(c.SetIdentifiers, r)
		if other, dup := owner[id]; dup {
			line := c.lines["set_identifiers."+r]
			if line == 0 {
				line = c.lines["set_identifiers."+other]
			}
			d.Errf(line, "router.set_identifiers."+r, "set identifier %q is also region %s's: each region needs its own", id, other)
		}
		owner[id] = r
	}
}

func setIdentifier(ids map[string]string, region string) string {
	if id := ids[region]; id != "" {
		return id
	}
	return region
}

// Open builds the driver (loading the AWS configuration; contacting nothing).
func (c *FleetConfig) Open(f *fleet.Fleet) (router.Driver, error) {
	return New(Config{
		HostedZoneID: c.HostedZoneID, Records: c.Records, Endpoint: c.Endpoint, SetIdentifiers: c.SetIdentifiers,
		Classes: f.Tenants, Regions: f.RegionNames(), Timeout: f.Router.Timeout, PollInterval: c.PollInterval,
		StepInterval: f.Failover.StepInterval,
	})
}

// Identity is the hosted zone, the endpoint and the record names.
func (c *FleetConfig) Identity() []string {
	out := []string{Driver, c.HostedZoneID, c.Endpoint}
	for _, class := range slices.Sorted(maps.Keys(c.Records)) {
		out = append(out, class+"="+c.Records[class])
	}
	return out
}
