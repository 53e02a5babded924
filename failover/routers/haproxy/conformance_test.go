//go:build integration

package haproxy

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lifeboat/fleet/router"
	"lifeboat/fleet/router/routertest"
	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) }

var classes = map[string][]string{
	"eu-only": {"eu-west-1", "eu-central-1"},
	"global":  {"us-east-1", "eu-west-1", "ap-southeast-1"},
}

var backends = map[string]string{"eu-only": "be_eu", "global": "be_global"}

var start = router.RouterState{Weights: router.Weights{
	"eu-only": {"eu-west-1": 50, "eu-central-1": 50},
	"global":  {"us-east-1": 40, "eu-west-1": 30, "ap-southeast-1": 30},
}, States: router.States{}}

// config is one backend per class, its servers named by region (the Runtime API drives weights
// and states; nothing is sent through the servers, so their addresses are placeholders).
func config() string {
	var b strings.Builder
	b.WriteString("defaults\n  mode http\n  timeout connect 2s\n  timeout client 10s\n  timeout server 10s\n\n")
	for _, class := range slices.Sorted(maps.Keys(backends)) {
		fmt.Fprintf(&b, "backend %s\n  balance roundrobin\n", backends[class])
		for i, r := range slices.Sorted(maps.Keys(start.Weights[class])) {
			fmt.Fprintf(&b, "  server %s 127.0.0.1:%d weight %d\n", r, 10001+i, start.Weights[class][r])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// The HAProxy driver against a real haproxy over its admin socket.
func TestConformance(t *testing.T) {
	routertest.Run(t, routertest.Harness{
		Name: "haproxy",
		Open: func(t *testing.T) routertest.Setup {
			h := emulators.StartHAProxy(t, config())
			d := &Router{Socket: h.Socket, Backends: backends, Classes: classes}
			other := &Router{Socket: h.Socket} // another admin on the same socket
			set := func(t *testing.T, cmds ...string) {
				t.Helper()
				for _, c := range cmds {
					if err := other.Set(t.Context(), c); err != nil {
						t.Fatal(err)
					}
				}
			}
			return routertest.Setup{
				Driver: d, State: start, Classes: classes,
				Tamper: func(t *testing.T) { set(t, "set weight be_eu/eu-west-1 7") },
				BreakTopology: func(t *testing.T) {
					// a server for a region outside the class's list, added at runtime and enabled
					if out, err := other.Command(t.Context(), "add server be_eu/us-east-1 127.0.0.1:10009 weight 10"); err != nil || !strings.Contains(out, "New server registered") {
						t.Fatalf("add server: %v %q", err, out)
					}
					set(t, "set server be_eu/us-east-1 state ready")
				},
			}
		},
		Unreachable: func(t *testing.T) router.Driver {
			return &Router{Socket: filepath.Join(t.TempDir(), "gone.sock"), Backends: backends, Classes: classes}
		},
		Stalled: func(t *testing.T) router.Driver {
			return &Router{Socket: routertest.SilentListener(t, "unix"), Backends: backends, Classes: classes}
		},
	})
}

// HAProxy's own leak: a backup server takes a backend's traffic when none of its active servers
// can (all down, or all drained), whatever weight Lifeboat gave the others, and weight 0 does not
// keep persistent connections off a server. So in a class backend, a server of a region outside
// the class is accepted only cut off (maint, weight 0): a backup server of another region at
// weight 0, ready, is refused before anything is written.
func TestBackupServerOfAnotherRegionRefused(t *testing.T) {
	h := emulators.StartHAProxy(t, config())
	d := &Router{Socket: h.Socket, Backends: backends, Classes: classes}
	if out, err := d.Command(t.Context(), "add server be_eu/us-east-1 127.0.0.1:10009 backup weight 0"); err != nil || !strings.Contains(out, "New server registered") {
		t.Fatalf("add backup server: %v %q", err, out)
	}
	// added servers start in maint: cut off, it can take nothing, and the router is accepted
	rs, err := d.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := router.CheckTopology(classes, rs); err != nil {
		t.Fatalf("a cut-off backup server of another region: %v, want accepted", err)
	}
	if err := d.Set(t.Context(), "set server be_eu/us-east-1 state ready"); err != nil {
		t.Fatal(err)
	}
	rs, err = d.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rs.Weights["eu-only"]["us-east-1"] != 0 {
		t.Fatalf("backup server weight reads %d, want 0", rs.Weights["eu-only"]["us-east-1"])
	}
	err = router.CheckTopology(classes, rs)
	if !errors.Is(err, router.ErrRouterTopology) || !strings.Contains(err.Error(), "eu-only/us-east-1 (weight 0, ready)") {
		t.Fatalf("a ready backup server of another region at weight 0: %v, want ErrRouterTopology naming eu-only/us-east-1", err)
	}
	t.Logf("refused: %v", err)
}
