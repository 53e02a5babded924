//go:build integration

package httpdoc

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"lifeboat/fleet/router"
	"lifeboat/fleet/router/routertest"
	"lifeboat/internal/emulators"
	"lifeboat/internal/faultproxy"
)

var classes = map[string][]string{
	"eu-only": {"eu-west-1", "eu-central-1"},
	"global":  {"us-east-1", "eu-west-1", "ap-southeast-1"},
}

var backends = map[string]string{"eu-only": "eu", "global": "global"}

var start = router.RouterState{Weights: router.Weights{
	"eu-only": {"eu-west-1": 50, "eu-central-1": 50},
	"global":  {"us-east-1": 40, "eu-west-1": 30, "ap-southeast-1": 30},
}, States: router.States{}}

func doc(t *testing.T, w map[string]int) []byte {
	b, err := json.Marshal(Doc{Weights: w})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func driver(url string) *Router {
	return &Router{URL: url, Backends: backends, Classes: classes, Timeout: 5 * time.Second}
}

// The http driver against the weight-document API (emulators.DocRouter) on loopback.
func TestConformance(t *testing.T) {
	var last *emulators.DocRouter // the router Open last started, for Stalled's proxy
	routertest.Run(t, routertest.Harness{
		Name: "http",
		Open: func(t *testing.T) routertest.Setup {
			docs := map[string][]byte{}
			for class, be := range backends {
				docs[be] = doc(t, start.Weights[class])
			}
			d := emulators.StartDocRouter(t, docs)
			last = d
			return routertest.Setup{
				Driver: driver(d.URL), State: start, Classes: classes,
				Tamper: func(t *testing.T) {
					var cur Doc
					if err := json.Unmarshal(d.Doc("eu"), &cur); err != nil {
						t.Fatal(err)
					}
					cur.Weights["eu-west-1"] = 7
					b, _ := json.Marshal(cur)
					d.Edit("eu", b)
				},
				BreakTopology: func(t *testing.T) {
					var cur Doc
					if err := json.Unmarshal(d.Doc("eu"), &cur); err != nil {
						t.Fatal(err)
					}
					cur.Weights["us-east-1"] = 10
					b, _ := json.Marshal(cur)
					d.Edit("eu", b)
				},
			}
		},
		Unreachable: func(t *testing.T) router.Driver {
			port, err := emulators.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			return driver(fmt.Sprintf("http://127.0.0.1:%d", port))
		},
		Stalled: func(t *testing.T) router.Driver {
			in := faultproxy.New()
			in.SetLatency(time.Hour, 0) // every request held until its sender gives up
			p, err := faultproxy.NewProxy(last.URL, in)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			return driver(p.URL)
		},
	})
}
