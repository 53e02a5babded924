package gatewayapi

import (
	"maps"
	"slices"
	"strings"

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
//	  services:                   # region → its backend (or `targets:`, the same)
//	    eu-west-1: vllm-eu-west-1:8000                 # a Service: [namespace/]name:port
//	    eu-central-1: {kind: InferencePool, name: vllm-eu-central-1}
//	    us-east-1: {kind: ServiceImport, name: vllm-us, namespace: mcs, port: 8000}
//
// A region's backend is either a Service as "[namespace/]name:port" or a mapping: kind
// (Service, ServiceImport, InferencePool, InferencePoolImport), name, namespace (optional: the
// routes'), port (a Service's or ServiceImport's; a pool's backendRef has none) and group
// (optional: the kind's own; another is an error).
type FleetConfig struct {
	Kubeconfig string             `json:"kubeconfig,omitempty"`
	Context    string             `json:"context,omitempty"`
	Namespace  string             `json:"namespace,omitempty"`
	Services   map[string]Backend `json:"services"`

	key   string         // "services" or "targets", as the file spells it
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
		"services": func(n *yaml.Node, at string) { c.targets(d, n, at, "services") },
		"targets":  func(n *yaml.Node, at string) { c.targets(d, n, at, "targets") },
	}
}

// targets decodes router.services (or its synonym router.targets): region → backend.
func (c *FleetConfig) targets(d *fleet.Decoder, n *yaml.Node, at, key string) {
	if c.key != "" {
		line := d.Line(at)
		if line == 0 {
			line = n.Line
		}
		d.Errf(line, at, "router.%s is given too: give each region's backend under one of services and targets (they mean the same)", c.key)
		return
	}
	c.key, c.Services, c.lines = key, map[string]Backend{}, map[string]int{}
	d.EachKey(n, at, func(k, v *yaml.Node, at string) {
		c.lines[k.Value] = k.Line
		if v.Kind == yaml.MappingNode {
			if b, ok := decodeTarget(d, v, at); ok {
				c.Services[k.Value] = b
			}
			return
		}
		if v.Kind != yaml.ScalarNode || yamlnode.IsNull(v) {
			d.Errf(v.Line, at, "want a Service as [namespace/]name:port or a mapping {kind, name, namespace, port, group}, got %s", yamlnode.KindName(v))
			return
		}
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
}

// decodeTarget decodes a region's backend written as a mapping: {kind, name, namespace, port,
// group}. ok is false after a problem was recorded.
func decodeTarget(d *fleet.Decoder, n *yaml.Node, at string) (Backend, bool) {
	var b Backend
	var group *string
	lines := map[string]int{}
	bad := false
	d.Mapping(n, at, false, yamlnode.Fields{
		"kind": func(v *yaml.Node, at string) {
			lines["kind"] = v.Line
			if k := d.Str(v, at, true); k != "" {
				if _, ok := KindGroup(k); !ok {
					d.Errf(v.Line, at, "%s", fleet.UnknownKind(k, Kinds()))
					bad = true
					return
				}
				b.Kind = k
			}
		},
		"name": func(v *yaml.Node, at string) {
			lines["name"] = v.Line
			b.Name = d.Str(v, at, true)
		},
		"namespace": func(v *yaml.Node, at string) {
			b.Namespace = d.Str(v, at, true)
			if b.Namespace != "" && !dnsLabel(b.Namespace) {
				d.Errf(v.Line, at, "%q is not a namespace name (lower-case letters, digits, '-'; at most 63)", b.Namespace)
				bad = true
			}
		},
		"port": func(v *yaml.Node, at string) {
			lines["port"] = v.Line
			b.Port = d.IntIn(v, at, 1, 65535)
			bad = bad || b.Port == 0
		},
		"group": func(v *yaml.Node, at string) {
			lines["group"] = v.Line
			g := d.Str(v, at, false)
			group = &g
		},
	})
	if b.Kind == "" {
		if !bad && lines["kind"] == 0 {
			d.Errf(n.Line, yamlnode.Join(at, "kind"), "required: one of %s", strings.Join(Kinds(), ", "))
		}
		return b, false
	}
	ok := !bad
	switch {
	case b.Name == "":
		if lines["name"] == 0 {
			d.Errf(n.Line, yamlnode.Join(at, "name"), "required: the %s's name", b.Kind)
		}
		ok = false
	case b.Kind == KindService && !dnsLabel(b.Name), b.Kind == KindServiceImport && !dnsLabel(b.Name):
		d.Errf(lines["name"], yamlnode.Join(at, "name"), "%q is not %s name (lower-case letters, digits, '-'; at most 63)", b.Name, an(b.Kind))
		ok = false
	case !dnsSubdomain(b.Name):
		d.Errf(lines["name"], yamlnode.Join(at, "name"), "%q is not %s name (lower-case letters, digits, '-', '.'; at most 253)", b.Name, an(b.Kind))
		ok = false
	}
	switch {
	case KindHasPort(b.Kind) && lines["port"] == 0:
		d.Errf(n.Line, yamlnode.Join(at, "port"), "required for %s: the port its backendRef names (1-65535)", an(b.Kind))
		ok = false
	case !KindHasPort(b.Kind) && lines["port"] != 0:
		d.Errf(lines["port"], yamlnode.Join(at, "port"), "a backendRef to %s carries no port (the pool's targetPorts are its own): remove it", an(b.Kind))
		ok = false
	}
	if want, _ := KindGroup(b.Kind); group != nil && *group != want {
		d.Errf(lines["group"], yamlnode.Join(at, "group"), "kind %s is in group %q, not %q (leave group out)", b.Kind, want, *group)
		ok = false
	}
	if b.Kind == KindService {
		b.Kind = "" // the same backend as its string form
	}
	return b, ok
}

// Check: every class has an HTTPRoute (router.backends), every region of a class a backend, and
// every backend names a region.
func (c *FleetConfig) Check(d *fleet.Decoder, f *fleet.Fleet) {
	d.RequireBackends(f)
	key := c.key
	if key == "" {
		key = "services"
	}
	for _, r := range slices.Sorted(maps.Keys(c.lines)) {
		if f.Regions[r] == nil {
			d.Errf(c.lines[r], "router."+key+"."+r, "region %q is not defined under regions%s", r, fleet.DidYouMean(r, slices.Sorted(maps.Keys(f.Regions))))
		}
	}
	missing := map[string]string{}
	for _, class := range slices.Sorted(maps.Keys(f.Tenants)) {
		for _, r := range f.Tenants[class] {
			if _, ok := c.lines[r]; !ok && missing[r] == "" && f.Regions[r] != nil {
				missing[r] = class
			}
		}
	}
	for _, r := range slices.Sorted(maps.Keys(missing)) {
		d.Errf(d.Line("router"), "router."+key+"."+r, "required with driver gateway-api: the backend of region %s, which class %s routes to: a Service ([namespace/]name:port) or {kind: %s, name: …}", r, missing[r], strings.Join(Kinds(), "|"))
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

// an is kind with its indefinite article: "a Service", "an InferencePool".
func an(kind string) string {
	if strings.ContainsRune("AEIOU", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
