package haproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"go.yaml.in/yaml/v3"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/yamlnode"
)

// Router drives HAProxy through its Runtime API on the admin socket (stats socket ...
// level admin): one backend per tenant class, its servers named by region. Weights are the
// servers' user weights (set weight, 0..256); drain and maint are set with set server ... state;
// show servers state reads everything back. Runtime changes are lost on reload: the journal is
// the source of truth and resume re-applies it.
type Router struct {
	Socket   string
	Backends map[string]string   // class → backend
	Classes  map[string][]string // class → eligible regions
	Timeout  time.Duration       // per command; 0 means 5s
}

func (h *Router) String() string { return "haproxy:" + h.Socket }

// MaxWeight is HAProxy's largest server weight.
func (h *Router) MaxWeight() int { return 256 }

func (h *Router) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return 5 * time.Second
}

// Command sends one command on its own connection and returns the answer.
func (h *Router) Command(parent context.Context, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(parent, h.timeout())
	defer cancel()
	bound := fmt.Sprintf("within %s", h.timeout())
	if pd, ok := parent.Deadline(); ok {
		if own, _ := ctx.Deadline(); !own.Before(pd) {
			bound = "before the caller's deadline" // which comes before the driver's timeout
		}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", h.Socket)
	if err != nil {
		return "", fmt.Errorf("haproxy %s: %v: %w", h.Socket, err, router.ErrRouterUnreachable)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte(cmd + "\n")); err != nil {
		return "", fmt.Errorf("haproxy %s: %q: %v: %w", h.Socket, cmd, err, router.ErrRouterUnreachable)
	}
	b, err := router.ReadBounded(conn)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return "", fmt.Errorf("haproxy %s: %q: no complete answer %s: %w", h.Socket, cmd, bound, router.ErrRouterUnreachable)
		}
		return "", fmt.Errorf("haproxy %s: %q: %v", h.Socket, cmd, err)
	}
	return string(b), nil
}

// Set runs a command whose success is an empty answer.
func (h *Router) Set(ctx context.Context, cmd string) error {
	out, err := h.Command(ctx, cmd)
	if err != nil {
		return err
	}
	if msg := strings.TrimSpace(out); msg != "" {
		return fmt.Errorf("haproxy %s: %q: %s", h.Socket, cmd, router.FirstLine(msg))
	}
	return nil
}

// HAProxy server admin-state bits (srv_admin_state).
const (
	haMaintMask = 0x01 | 0x02 | 0x04 | 0x20 | 0x40 // forced, inherited, config, resolution, health maint
	haDrainMask = 0x08 | 0x10                      // forced, inherited drain
)

// Server is one server of a backend as show servers state reads it.
type Server struct {
	Weight int
	State  router.State
}

// Servers reads one backend with show servers state.
func (h *Router) Servers(ctx context.Context, backend string) (map[string]Server, error) {
	out, err := h.Command(ctx, "show servers state "+backend)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var cols map[string]int
	srv := map[string]Server{}
	line := 0
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		line++
		switch {
		case text == "":
			continue
		case line == 1:
			if text != "1" {
				return nil, fmt.Errorf("haproxy %s: show servers state %s: %s", h.Socket, backend, router.FirstLine(text))
			}
			continue
		case strings.HasPrefix(text, "#"):
			cols = map[string]int{}
			for i, f := range strings.Fields(strings.TrimPrefix(text, "#")) {
				cols[f] = i
			}
			continue
		}
		if cols == nil {
			return nil, fmt.Errorf("haproxy %s: show servers state %s: no header line", h.Socket, backend)
		}
		f := strings.Fields(text)
		get := func(name string) (string, error) {
			i, ok := cols[name]
			if !ok || i >= len(f) {
				return "", fmt.Errorf("haproxy %s: show servers state %s: no %s column", h.Socket, backend, name)
			}
			return f[i], nil
		}
		be, err := get("be_name")
		if err != nil {
			return nil, err
		}
		if be != backend {
			continue
		}
		name, err := get("srv_name")
		if err != nil {
			return nil, err
		}
		ws, err := get("srv_uweight")
		if err != nil {
			return nil, err
		}
		as, err := get("srv_admin_state")
		if err != nil {
			return nil, err
		}
		w, err1 := strconv.Atoi(ws)
		adm, err2 := strconv.Atoi(as)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("haproxy %s: show servers state %s: server %s: weight %q admin state %q", h.Socket, backend, name, ws, as)
		}
		s := Server{Weight: w, State: router.Ready}
		switch {
		case adm&haMaintMask != 0:
			s.State = router.Maint
		case adm&haDrainMask != 0:
			s.State = router.Drain
		}
		srv[name] = s
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("haproxy %s: show servers state %s: %v", h.Socket, backend, err)
	}
	if cols == nil {
		return nil, fmt.Errorf("haproxy %s: show servers state %s: %s", h.Socket, backend, router.FirstLine(strings.TrimSpace(out)))
	}
	return srv, nil
}

// serversDigest is the version of one backend as read: its servers' weights and states (the
// Runtime API has no compare-and-swap, so ApplyIf compares these right before its commands).
func serversDigest(srv map[string]Server) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(srv)) {
		fmt.Fprintf(&b, "%s=%d/%s;", name, srv[name].Weight, srv[name].State)
	}
	return router.DigestOf([]byte(b.String()))
}

// Read returns every class backend's servers. An eligible region with no server in its class's
// backend can receive nothing: it reads as weight 0, maint.
func (h *Router) Read(ctx context.Context) (router.RouterState, error) {
	rs, _, err := h.ReadVersion(ctx)
	return rs, err
}

// ReadVersion is Read with each backend's digest.
func (h *Router) ReadVersion(ctx context.Context) (router.RouterState, router.RouterVersion, error) {
	rs := router.RouterState{Weights: router.Weights{}, States: router.States{}}
	v := router.RouterVersion{}
	for _, class := range slices.Sorted(maps.Keys(h.Backends)) {
		srv, err := h.Servers(ctx, h.Backends[class])
		if err != nil {
			return rs, nil, err
		}
		v[class] = serversDigest(srv)
		rs.Weights[class] = map[string]int{}
		for name, s := range srv {
			rs.Weights[class][name] = s.Weight
			if s.State != router.Ready {
				rs.States.Set(class, name, s.State)
			}
		}
		for _, r := range h.Classes[class] {
			if _, ok := srv[r]; !ok {
				rs.Weights[class][r] = 0
				rs.States.Set(class, r, router.Maint)
			}
		}
	}
	return rs, v, nil
}

// Apply sets each class's servers whatever they held (the executor uses ApplyIf).
func (h *Router) Apply(ctx context.Context, desired router.RouterState) error {
	return h.apply(ctx, desired, nil, func() error { return nil })
}

// ApplyIf is Apply where each backend's servers, read immediately before its commands, are still
// as this run last saw them (since): HAProxy has no compare-and-swap, so an edit between that
// read and the commands (milliseconds) is the window that remains. fence runs before every
// command.
func (h *Router) ApplyIf(ctx context.Context, desired router.RouterState, since router.RouterVersion, fence func() error) error {
	return h.apply(ctx, desired, since, fence)
}

// apply sets each class's servers in an order that never leaves a class without a receiver:
// servers coming back are weighted and made ready first, then weights rise, then fall, then
// servers are drained or cut off. since nil: unconditional.
func (h *Router) apply(ctx context.Context, desired router.RouterState, since router.RouterVersion, fence func() error) error {
	for _, class := range slices.Sorted(maps.Keys(desired.Weights)) {
		backend, ok := h.Backends[class]
		if !ok {
			return fmt.Errorf("haproxy: class %s has no backend (router.backends)", class)
		}
		cur, err := h.Servers(ctx, backend)
		if err != nil {
			return err
		}
		if since != nil {
			if err := router.SameVersion(h.String(), class, since, serversDigest(cur)); err != nil {
				return err
			}
		}
		names := unionStrings(desired.Weights[class])
		for r := range desired.States[class] {
			if !slices.Contains(names, r) {
				names = append(names, r)
			}
		}
		sort.Strings(names)
		type op struct {
			order int
			cmd   string
		}
		var ops []op
		for _, r := range names {
			want := Server{Weight: desired.Weights[class][r], State: desired.States.Get(class, r)}
			have, present := cur[r]
			if !present {
				if want.Weight == 0 && want.State != router.Ready {
					continue // no server: it receives nothing, as wanted
				}
				return fmt.Errorf("haproxy: backend %s has no server %s (servers are named by region)", backend, r)
			}
			srv := backend + "/" + r
			if want.State == router.Ready && have.State != router.Ready {
				ops = append(ops, op{0, fmt.Sprintf("set weight %s %d", srv, want.Weight)}, op{1, fmt.Sprintf("set server %s state ready", srv)})
				continue
			}
			if want.Weight > have.Weight {
				ops = append(ops, op{2, fmt.Sprintf("set weight %s %d", srv, want.Weight)})
			}
			if want.Weight < have.Weight {
				ops = append(ops, op{3, fmt.Sprintf("set weight %s %d", srv, want.Weight)})
			}
			if want.State != have.State && want.State != router.Ready {
				ops = append(ops, op{4, fmt.Sprintf("set server %s state %s", srv, want.State)})
			}
		}
		sort.SliceStable(ops, func(i, j int) bool { return ops[i].order < ops[j].order })
		for _, o := range ops {
			if err := fence(); err != nil {
				return err
			}
			if err := h.Set(ctx, o.cmd); err != nil {
				return err
			}
		}
	}
	return nil
}

// Register the kind; cmd/lifeboat/kinds.go links it in.
func init() {
	fleet.RegisterDriver(fleet.DriverKind{Name: fleet.DriverHAProxy, Order: 2, Config: func() fleet.DriverConfig { return &Config{} }})
}

// The configuration's interface and the driver's capabilities, checked at compile time.
var (
	_ fleet.DriverConfig       = (*Config)(nil)
	_ router.ConditionalDriver = (*Router)(nil)
)

// HAProxyConfig is the HAProxy driver's: router: {driver: haproxy, socket: /run/haproxy/admin.sock}.
type Config struct {
	Socket string `json:"socket"` // the admin socket (level admin)
}

func (c *Config) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{"socket": func(n *yaml.Node, at string) { c.Socket = d.Path(n, at) }}
}

func (c *Config) Check(d *fleet.Decoder, f *fleet.Fleet) {
	d.RequireRouter(f, c.Socket != "", "socket", "the admin socket (stats socket ... level admin)")
	d.RequireBackends(f)
}

func (c *Config) Open(f *fleet.Fleet) (router.Driver, error) {
	return &Router{Socket: c.Socket, Backends: f.Router.Backends, Classes: f.Tenants, Timeout: f.Router.Timeout}, nil
}
func (c *Config) Identity() []string { return []string{c.Socket, "", ""} }

// unionStrings is the sorted union of the maps' keys.
func unionStrings(ms ...map[string]int) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}
