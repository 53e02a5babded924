//go:build integration

package failover

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lifeboat/failover/routers/caddy"
	"lifeboat/failover/routers/haproxy"
	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
)

// The §3 recoveries through the real routers: HAProxy over its Runtime API (restarted from its
// configuration during a step) and Caddy over its admin API (the dead holder's write landing
// after the next holder read the route). A small proxy in front of each router's API holds one
// write in flight, as a slow path does, so that the holder can be killed with it there.

// haproxyHold is a Runtime API proxy: each connection's command goes on to HAProxy, except the
// first "set " command after arm, which is held (never sent) and reported on held.
type haproxyHold struct {
	Socket string
	arm    chan struct{}
	held   chan struct{}
	once   sync.Once
}

func newHAProxyHold(t *testing.T, target string) *haproxyHold {
	p := &haproxyHold{Socket: filepath.Join(t.TempDir(), "proxy.sock"), arm: make(chan struct{}), held: make(chan struct{})}
	ln, err := net.Listen("unix", p.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c, target)
		}
	}()
	return p
}

func (p *haproxyHold) serve(c net.Conn, target string) {
	defer c.Close()
	cmd, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return
	}
	if strings.HasPrefix(cmd, "set ") {
		select {
		case <-p.arm:
			first := false
			p.once.Do(func() { first = true; close(p.held) })
			if first {
				io.Copy(io.Discard, c) // held until its sender is gone; never sent on
				return
			}
		default:
		}
	}
	up, err := net.Dial("unix", target)
	if err != nil {
		return
	}
	defer up.Close()
	if _, err := up.Write([]byte(cmd)); err != nil {
		return
	}
	io.Copy(c, up)
}

// HAProxy restarted from its configuration during step 2 (its write held in flight, the holder
// killed): resume re-plans from the weights HAProxy reads now, at most step_percent a step, and
// finishes (exit 0); it used to hold on step_percent at every resume.
func TestHAProxyRestartDuringStepReplans(t *testing.T) {
	h := emulators.StartHAProxy(t, binHAProxyConfig())
	p := newHAProxyHold(t, h.Socket)
	dir, state := binDir(t, fmt.Sprintf("router: {driver: haproxy, socket: %q, backends: {eu-only: be_eu, global: be_global}}", p.Socket), "step_interval: 300ms, lock_ttl: 5s")
	a := startLB(t, dir, nil, runArgs...)
	waitJournal(t, a, strings.TrimPrefix(state, "file://"), RecResult, 0, time.Minute)
	close(p.arm)
	select {
	case <-p.held:
	case <-time.After(time.Minute):
		t.Fatalf("the holder never wrote its second step: %s", a.stderr)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.wait(t, time.Minute)
	h.Restart(t)
	code, out, errOut := runLB(t, dir, nil, resumeArgs...)
	if code != 0 {
		t.Fatalf("resume after HAProxy restarted during a step: exit %d, want 0\n%s\n%s", code, out, errOut)
	}
	srv, err := (&haproxy.Router{Socket: h.Socket}).Servers(testbed.Ctx(t), "be_eu")
	if err != nil || srv["eu-west-1"].Weight != 0 {
		t.Fatalf("the run did not finish: %v %+v", err, srv)
	}
	checkReplanned(t, state, errOut)
}

// checkReplanned: a replan is journaled and no step moved more than step_percent (25).
func checkReplanned(t *testing.T, state, errOut string) {
	t.Helper()
	replanned := false
	for _, recs := range journalRecords(t, state) {
		for _, r := range recs {
			replanned = replanned || r.Kind == RecReplan
			if r.Kind != RecResult || r.Before == nil || r.After == nil {
				continue
			}
			for class, w := range r.After.Weights {
				for region, v := range w {
					if moved := v - r.Before.Weights[class][region]; moved > 25 || moved < -25 {
						t.Errorf("step %d moved %s/%s by %d (step_percent 25)", *r.Step, class, region, moved)
					}
				}
			}
		}
	}
	if !replanned {
		t.Fatalf("no replan journaled: %s", errOut)
	}
}

// caddyHold is an admin API proxy in front of Caddy that holds the first PATCH after arm (read
// whole, not sent on) until the next PATCH arrives: then the held one goes on to Caddy first —
// the dead holder's write landing late — and the next one after it.
type caddyHold struct {
	URL    string
	target string
	arm    chan struct{}
	held   chan struct{}
	mu     sync.Mutex
	queued *http.Request
	body   []byte
	n      int
}

func newCaddyHold(t *testing.T, target string) *caddyHold {
	p := &caddyHold{target: target, arm: make(chan struct{}), held: make(chan struct{})}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *caddyHold) forward(ctx context.Context, r *http.Request, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = r.Header.Clone()
	req.Close = true
	return http.DefaultClient.Do(req)
}

func (p *caddyHold) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	armed := false
	select {
	case <-p.arm:
		armed = r.Method == http.MethodPatch
	default:
	}
	if armed {
		p.mu.Lock()
		p.n++
		n := p.n
		if n == 1 {
			p.queued, p.body = r.Clone(context.Background()), body
			close(p.held)
		}
		queued, qbody := p.queued, p.body
		p.mu.Unlock()
		if n == 1 {
			<-r.Context().Done() // in flight until its sender is gone
			return
		}
		if n == 2 && queued != nil {
			if resp, err := p.forward(context.Background(), queued, qbody); err == nil {
				resp.Body.Close()
			}
		}
	}
	resp, err := p.forward(r.Context(), r, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// Caddy: kill -9 with the PATCH of step 2 in flight, and that PATCH landing after resume read the
// route: resume's own PATCH (If-Match on what it read) answers 412, and the route reads as the
// dead holder's journaled intent: its own write. Resume finishes the step (exit 0), where it
// used to exit 3 blaming "someone else edited the router".
func TestCaddyInFlightWriteLandingLateIsFinished(t *testing.T) {
	c := startBinCaddy(t, nil)
	p := newCaddyHold(t, c.Admin)
	dir, state := binDir(t, fmt.Sprintf("router: {driver: caddy, url: %q, backends: {eu-only: route-eu, global: route-global}}", p.URL), "step_interval: 300ms, lock_ttl: 5s")
	a := startLB(t, dir, nil, runArgs...)
	waitJournal(t, a, strings.TrimPrefix(state, "file://"), RecResult, 0, time.Minute)
	close(p.arm)
	select {
	case <-p.held:
	case <-time.After(time.Minute):
		t.Fatalf("the holder never wrote its second step: %s", a.stderr)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.wait(t, time.Minute)
	code, out, errOut := runLB(t, dir, nil, resumeArgs...)
	if code != 0 {
		t.Fatalf("resume after kill -9 with a Caddy write in flight: exit %d, want 0\n%s\n%s", code, out, errOut)
	}
	rs, err := (&caddy.Router{Admin: c.Admin, Routes: map[string]string{"eu-only": "route-eu"}, Dials: binDials}).Read(testbed.Ctx(t))
	if err != nil || rs.Weights["eu-only"]["eu-west-1"] != 0 {
		t.Fatalf("the run did not finish: %v %+v", err, rs)
	}
	landed := false
	for _, recs := range journalRecords(t, state) {
		for _, r := range recs {
			landed = landed || (r.Kind == RecResult && strings.Contains(r.Detail, "previous holder's write landed"))
		}
	}
	if !landed {
		t.Fatalf("the late write was not recorded as the dead holder's: %s", errOut)
	}
}
