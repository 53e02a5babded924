package gatewayapi

import (
	"maps"
	"slices"

	"go.yaml.in/yaml/v3"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/yamlnode"
)

// The driver's registration: router: {driver: gateway-api, …}.
func init() {
	fleet.RegisterDriver(fleet.DriverKind{Name: Driver, Order: 5, Config: func() fleet.DriverConfig { return &FleetConfig{} }})
}

var _ fleet.DriverConfig = (*FleetConfig)(nil)

// FleetConfig is the driver's part of a fleet file:
//
//	router:
//	  driver: gateway-api
//	  kubeconfig: ./kubeconfig    # optional: $KUBECONFIG, ~/.kube/config, then the pod's service account
//	  context: prod-eu            # optional: the kubeconfig's current context
//	  namespace: serving          # optional: the context's namespace; the HTTPRoutes' namespace
//	  backends:                   # class → its HTTPRoute
//	    eu-only: vllm-eu-only
//	  services:                   # region → its backend Service: [namespace/]name:port
//	    eu-west-1: vllm-eu-west-1:8000
type FleetConfig struct {
	Kubeconfig string             `json:"kubeconfig,omitempty"`
	Context    string             `json:"context,omitempty"`
	Namespace  string             `json:"namespace,omitempty"`
	Services   map[string]Backend `json:"services"`

	lines map[string]int // services.<region> → line
}

// Keys decodes kubeconfig, context, namespace and services.
func (c *FleetConfig) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{
		"kubeconfig": func(n *yaml.Node, at string) { c.Kubeconfig = d.Path(n, at) },
		"context":    func(n *yaml.Node, at string) { c.Context = d.Str(n, at, true) },
		"namespace": func(n *yaml.Node, at string) {
			c.Namespace = d.Str(n, at, true)
			if c.Namespace != "" && !dnsLabel(c.Namespace) {
				d.Errf(n.Line, at, "%q is not a namespace name (lower-case letters, digits, '-'; at most 63)", c.Namespace)
			}
		},
		"services": func(n *yaml.Node, at string) {
			c.Services, c.lines = map[string]Backend{}, map[string]int{}
			d.EachKey(n, at, func(k, v *yaml.Node, at string) {
				c.lines[k.Value] = k.Line
				s := d.Str(v, at, true)
				if s == "" {
					return
				}
				b, err := ParseBackend(s)
				if err != nil {
					d.Errf(v.Line, at, "%v", err)
					return
				}
				c.Services[k.Value] = b
			})
		},
	}
}

// Check: every class has an HTTPRoute (router.backends), every region of a class a Service, and
// every service names a region.
func (c *FleetConfig) Check(d *fleet.Decoder, f *fleet.Fleet) {
	d.RequireBackends(f)
	for _, r := range slices.Sorted(maps.Keys(c.Services)) {
		if f.Regions[r] == nil {
			d.Errf(c.lines[r], "router.services."+r, "region %q is not defined under regions", r)
		}
	}
	missing := map[string]string{}
	for _, class := range slices.Sorted(maps.Keys(f.Tenants)) {
		for _, r := range f.Tenants[class] {
			if _, ok := c.Services[r]; !ok && missing[r] == "" && f.Regions[r] != nil {
				missing[r] = class
			}
		}
	}
	for _, r := range slices.Sorted(maps.Keys(missing)) {
		d.Errf(d.Line("router"), "router.services."+r, "required with driver gateway-api: the backend Service ([namespace/]name:port) of region %s, which class %s routes to", r, missing[r])
	}
}

// Open opens the cluster (reading the kubeconfig; contacting nothing).
func (c *FleetConfig) Open(f *fleet.Fleet) (router.Driver, error) {
	return New(Config{Kubeconfig: c.Kubeconfig, Context: c.Context, Namespace: c.Namespace,
		Routes: f.Router.Backends, Services: c.Services, Classes: f.Tenants, Timeout: f.Router.Timeout})
}

// Identity is the cluster and namespace the routes are in.
func (c *FleetConfig) Identity() []string {
	return []string{Driver, c.Kubeconfig, c.Context, c.Namespace}
}
