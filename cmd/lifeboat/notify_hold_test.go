//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"lifeboat/internal/testbed"
)

// httpRouter is a custom router (fleet router.driver: http) in the test process: one JSON
// document per backend, GET with an ETag, PUT with If-Match. failPut answers every PUT 500;
// drift changes a document once, on the second GET of it after the run's first PUT to it (the
// first is the run's read-back, the second its read before the next step): another hand
// edited the router between two steps.
type httpRouter struct {
	mu      sync.Mutex
	docs    map[string]string
	version map[string]int
	since   map[string]int // GETs of a backend since its last PUT (-1: never PUT)
	failPut bool
	drift   bool
	drifted bool
	puts    int
}

func newHTTPRouter() *httpRouter {
	return &httpRouter{
		docs: map[string]string{
			"eu":     `{"weights": {"eu-west-1": 50, "eu-central-1": 50}}`,
			"global": `{"weights": {"us-east-1": 60, "eu-west-1": 40}}`,
		},
		version: map[string]int{"eu": 1, "global": 1},
		since:   map[string]int{"eu": -1, "global": -1},
	}
}

func (h *httpRouter) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := strings.TrimPrefix(req.URL.Path, "/")
	if _, ok := h.docs[b]; !ok {
		http.NotFound(w, req)
		return
	}
	etag := func() string { return `"` + strconv.Itoa(h.version[b]) + `"` }
	switch req.Method {
	case http.MethodGet:
		if h.drift && !h.drifted && h.since[b] == 1 {
			// someone else sets the class by hand, between two steps of the run
			h.docs[b], h.drifted = `{"weights": {"us-east-1": 100}}`, true
			if b == "eu" {
				h.docs[b] = `{"weights": {"eu-central-1": 100}}`
			}
			h.version[b]++
		}
		if h.since[b] >= 0 {
			h.since[b]++
		}
		w.Header().Set("ETag", etag())
		io.WriteString(w, h.docs[b])
	case http.MethodPut:
		h.puts++
		if h.failPut {
			http.Error(w, "router is read-only: a configuration push is in progress", http.StatusInternalServerError)
			return
		}
		if req.Header.Get("If-Match") != etag() {
			w.WriteHeader(http.StatusPreconditionFailed)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		h.docs[b] = string(body)
		h.version[b]++
		h.since[b] = 0
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// TestFailoverHoldAndFailureNotifications: a run that holds (the router edited by another hand
// between two steps: exit 1) and a run that fails (the router answers every write 500), each
// through the binary with two healthy webhooks, a generic JSON one and a Slack-format one. Both
// receivers get the run's start and then its hold (failover.hold, verdict held) or its failure
// (failover.failed, verdict failed), naming the step and what went wrong, with a pasteable
// next command `lifeboat failover resume --fleet fleet.yaml`; no body carries a secret: not the
// webhooks' URLs or their tokens, not the cloud credentials in the environment.
func TestFailoverHoldAndFailureNotifications(t *testing.T) {
	testbed.LifeboatBinary(t) // built before failoverDir changes the working directory
	const (
		hookToken = "T0KEN-h0ld-s3cr3t-1c2d"
		awsSecret = "AwsSecretKey-h0ld-77e6"
	)
	for _, c := range []struct {
		name, event, verdict, detail, stderr string
		code                                 int
		router                               func(*httpRouter)
	}{
		{"hold", "failover.hold", "held", "step 2: drift: ", "before step 2 of 3", 1, func(h *httpRouter) { h.drift = true }},
		// exit 4: a router answering HTTP 500 is up but not serving its API, unreachable for now
		{"failed", "failover.failed", "failed", "step 1: apply to http:", "HTTP 500: router is read-only", 4, func(h *httpRouter) { h.failPut = true }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var js, slack receiver
			jsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { js.record(req) }))
			defer jsSrv.Close()
			slackSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { slack.record(req) }))
			defer slackSrv.Close()
			rt := newHTTPRouter()
			c.router(rt)
			rtSrv := httptest.NewServer(rt)
			defer rtSrv.Close()

			dir := failoverDir(t)
			fleet := strings.Replace(cliFleet, "router: {driver: file, path: weights.json}",
				fmt.Sprintf("router: {driver: http, url: %q, backends: {eu-only: eu, global: global}, timeout: 2s}", rtSrv.URL), 1)
			fleet = strings.Replace(fleet, "step_interval: 10ms", "step_interval: 50ms", 1)
			fleet += `notify:
  - {name: oncall, url_env: LB_TEST_HOLD_JSON, format: json}
  - {name: chat, url_env: LB_TEST_HOLD_SLACK, format: slack}
`
			if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(fleet), 0o644); err != nil {
				t.Fatal(err)
			}
			env := []string{
				"LB_TEST_HOLD_JSON=" + jsSrv.URL + "/hooks/" + hookToken,
				"LB_TEST_HOLD_SLACK=" + slackSrv.URL + "/services/T0/B0/" + hookToken + "?token=" + hookToken,
				"AWS_ACCESS_KEY_ID=AKIAH0LDKEYID0815", "AWS_SECRET_ACCESS_KEY=" + awsSecret,
			}
			r := cli(t, env, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "INC-9")
			if r.code != c.code || !strings.Contains(r.stderr, c.stderr) {
				t.Fatalf("run: exit %d, want %d and %q\n%s\n%s", r.code, c.code, c.stderr, r.stdout, r.stderr)
			}
			if got := strings.Join(js.events(), " "); got != "failover.start "+c.event {
				t.Fatalf("events at the JSON receiver: %q, want start then %s\n%s", got, c.event, r.stderr)
			}
			js.mu.Lock()
			start, last := js.bodies[0], js.bodies[1]
			js.mu.Unlock()
			const next = "lifeboat failover resume --fleet fleet.yaml"
			if last["schema"] != "lifeboat.notification/v1" || last["verdict"] != c.verdict || last["fleet"] != "fleet.yaml" ||
				last["model"] != "llama-demo" || last["operation"] != "evacuate eu-west-1" || last["reason"] != "INC-9" ||
				last["run"] != start["run"] || fmtAny(last["run"]) == "" ||
				!strings.HasPrefix(fmtAny(last["next"]), next) || !strings.HasPrefix(fmtAny(last["detail"]), c.detail) {
				t.Errorf("%s body: %v", c.event, last)
			}
			if regions, _ := last["regions"].([]any); len(regions) == 0 || regions[0] != "eu-west-1" {
				t.Errorf("regions of %v", last)
			}
			// the command the notification names is one the binary takes
			args := strings.Fields(strings.TrimPrefix(strings.SplitN(fmtAny(last["next"]), "   ", 2)[0], "lifeboat "))
			if h := cli(t, nil, append(args, "--help")...); h.code != 0 {
				t.Errorf("the next command %v: exit %d\n%s", args, h.code, h.stderr)
			}

			slack.mu.Lock()
			slackBodies := slack.bodies
			slack.mu.Unlock()
			var sl map[string]any
			for _, b := range slackBodies {
				if strings.Contains(fmtAny(b["text"]), c.event) {
					sl = b
				}
			}
			raw, _ := json.Marshal(sl)
			if sl == nil || !strings.Contains(fmtAny(sl["text"]), strings.ToUpper(c.verdict)) || sl["blocks"] == nil ||
				!strings.Contains(string(raw), "Next: `"+next) {
				t.Errorf("no Slack-format %s with the next command: %v", c.event, slackBodies)
			}

			all, _ := json.Marshal([]any{js.bodies, slackBodies})
			for _, s := range []string{r.stdout + r.stderr, string(all)} {
				for _, secret := range []string{hookToken, awsSecret, jsSrv.URL, slackSrv.URL} {
					if strings.Contains(s, secret) {
						t.Fatalf("a secret (%.12s…) leaked:\n%s", secret, s)
					}
				}
			}
		})
	}
}
