package failover

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"lifeboat/fleet/router"
)

// HAProxyRouter drives HAProxy through its Runtime API on the admin socket (stats socket ...
// level admin): one backend per tenant class, its servers named by region. Weights are the
// servers' user weights (set weight, 0..256); drain and maint are set with set server ... state;
// show servers state reads everything back. Runtime changes are lost on reload: the journal is
// the source of truth and resume re-applies it.
type HAProxyRouter struct {
	Socket   string
	Backends map[string]string   // class → backend
	Classes  map[string][]string // class → eligible regions
	Timeout  time.Duration       // per command; 0 means 5s
}

func (h *HAProxyRouter) String() string { return "haproxy:" + h.Socket }

// MaxWeight is HAProxy's largest server weight.
func (h *HAProxyRouter) MaxWeight() int { return 256 }

func (h *HAProxyRouter) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return 5 * time.Second
}

// command sends one command on its own connection and returns the answer.
func (h *HAProxyRouter) command(ctx context.Context, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
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
			return "", fmt.Errorf("haproxy %s: %q: no complete answer within %s: %w", h.Socket, cmd, h.timeout(), router.ErrRouterUnreachable)
		}
		return "", fmt.Errorf("haproxy %s: %q: %v", h.Socket, cmd, err)
	}
	return string(b), nil
}

// set runs a command whose success is an empty answer.
func (h *HAProxyRouter) set(ctx context.Context, cmd string) error {
	out, err := h.command(ctx, cmd)
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

type haServer struct {
	weight int
	state  router.State
}

// servers reads one backend with show servers state.
func (h *HAProxyRouter) servers(ctx context.Context, backend string) (map[string]haServer, error) {
	out, err := h.command(ctx, "show servers state "+backend)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var cols map[string]int
	srv := map[string]haServer{}
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
		s := haServer{weight: w, state: router.Ready}
		switch {
		case adm&haMaintMask != 0:
			s.state = router.Maint
		case adm&haDrainMask != 0:
			s.state = router.Drain
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
func serversDigest(srv map[string]haServer) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(srv)) {
		fmt.Fprintf(&b, "%s=%d/%s;", name, srv[name].weight, srv[name].state)
	}
	return router.DigestOf([]byte(b.String()))
}

// Read returns every class backend's servers. An eligible region with no server in its class's
// backend can receive nothing: it reads as weight 0, maint.
func (h *HAProxyRouter) Read(ctx context.Context) (router.RouterState, error) {
	rs, _, err := h.ReadVersion(ctx)
	return rs, err
}

// ReadVersion is Read with each backend's digest.
func (h *HAProxyRouter) ReadVersion(ctx context.Context) (router.RouterState, router.RouterVersion, error) {
	rs := router.RouterState{Weights: router.Weights{}, States: router.States{}}
	v := router.RouterVersion{}
	for _, class := range slices.Sorted(maps.Keys(h.Backends)) {
		srv, err := h.servers(ctx, h.Backends[class])
		if err != nil {
			return rs, nil, err
		}
		v[class] = serversDigest(srv)
		rs.Weights[class] = map[string]int{}
		for name, s := range srv {
			rs.Weights[class][name] = s.weight
			if s.state != router.Ready {
				rs.States.Set(class, name, s.state)
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
func (h *HAProxyRouter) Apply(ctx context.Context, desired router.RouterState) error {
	return h.apply(ctx, desired, nil, func() error { return nil })
}

// ApplyIf is Apply where each backend's servers, read immediately before its commands, are still
// as this run last saw them (since): HAProxy has no compare-and-swap, so an edit between that
// read and the commands (milliseconds) is the window that remains. fence runs before every
// command.
func (h *HAProxyRouter) ApplyIf(ctx context.Context, desired router.RouterState, since router.RouterVersion, fence func() error) error {
	return h.apply(ctx, desired, since, fence)
}

// apply sets each class's servers in an order that never leaves a class without a receiver:
// servers coming back are weighted and made ready first, then weights rise, then fall, then
// servers are drained or cut off. since nil: unconditional.
func (h *HAProxyRouter) apply(ctx context.Context, desired router.RouterState, since router.RouterVersion, fence func() error) error {
	for _, class := range slices.Sorted(maps.Keys(desired.Weights)) {
		backend, ok := h.Backends[class]
		if !ok {
			return fmt.Errorf("haproxy: class %s has no backend (router.backends)", class)
		}
		cur, err := h.servers(ctx, backend)
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
			want := haServer{weight: desired.Weights[class][r], state: desired.States.Get(class, r)}
			have, present := cur[r]
			if !present {
				if want.weight == 0 && want.state != router.Ready {
					continue // no server: it receives nothing, as wanted
				}
				return fmt.Errorf("haproxy: backend %s has no server %s (servers are named by region)", backend, r)
			}
			srv := backend + "/" + r
			if want.state == router.Ready && have.state != router.Ready {
				ops = append(ops, op{0, fmt.Sprintf("set weight %s %d", srv, want.weight)}, op{1, fmt.Sprintf("set server %s state ready", srv)})
				continue
			}
			if want.weight > have.weight {
				ops = append(ops, op{2, fmt.Sprintf("set weight %s %d", srv, want.weight)})
			}
			if want.weight < have.weight {
				ops = append(ops, op{3, fmt.Sprintf("set weight %s %d", srv, want.weight)})
			}
			if want.state != have.state && want.state != router.Ready {
				ops = append(ops, op{4, fmt.Sprintf("set server %s state %s", srv, want.state)})
			}
		}
		sort.SliceStable(ops, func(i, j int) bool { return ops[i].order < ops[j].order })
		for _, o := range ops {
			if err := fence(); err != nil {
				return err
			}
			if err := h.set(ctx, o.cmd); err != nil {
				return err
			}
		}
	}
	return nil
}
