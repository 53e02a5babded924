// The listen wait and the plain GET exchanges: /health (asked again while the process lives),
// /v1/models with its adapters, and a replica's error text made safe to print.

package warm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"lifeboat/internal/base/wait"
	"lifeboat/providers"
)

// WaitingInterval is how often ProbeOptions.Waiting is called while waiting.
const WaitingInterval = 5 * time.Second

// waitListen connects until the port accepts, the instance exits, or the timeout passes.
func (p *prober) waitListen(ctx context.Context) bool {
	u, err := url.Parse(p.base)
	if err != nil || u.Host == "" {
		p.check("listen", false, Loading, "bad URL %q", p.base)
		return false
	}
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	var exited <-chan struct{}
	if p.o.Instance != nil {
		exited = p.o.Instance.Exited()
	}
	wait := 10 * time.Millisecond
	attempts := 0
	var lastErr error
	lastSaid := time.Now()
	for {
		if p.o.Waiting != nil && time.Since(lastSaid) >= WaitingInterval {
			lastSaid = time.Now()
			p.o.Waiting(fmt.Sprintf("listen: waiting for %s to accept a connection (timeout %s)", addr, p.o.Timeout), time.Since(p.start))
		}
		attempts++
		d := net.Dialer{Timeout: min(2*time.Second, MaxPollInterval*5)}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			p.res.Timings.ListenS = p.since()
			p.check("listen", true, "", "%s accepted a connection after %d attempt(s)", addr, attempts)
			return true
		}
		lastErr = err
		if p.exited() {
			p.exitCheck()
			return false
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-exited:
			t.Stop()
			p.exitCheck()
			return false
		case <-ctx.Done():
			t.Stop()
			why := "timed out"
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				why = "interrupted"
			} else if d, ok := p.o.Instance.(Diagnoser); ok {
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				lf := d.Diagnose(dctx)
				cancel()
				if lf != nil {
					p.res.LogTail = lf.LogTail
					p.check("replica", false, lf.Verdict, "%s (after %s)", lf.Reason, time.Since(p.start).Round(time.Millisecond))
					return false
				}
			}
			if why == "timed out" && (p.o.Instance == nil || p.o.Instance.Exited() == nil) {
				// Nothing Lifeboat started: a URL whose port never took a connection. It may be a
				// replica still loading (vLLM listens only when ready), one that is down, or a
				// wrong address — the probe cannot tell which, and says so instead of guessing.
				p.check("listen", false, Unreachable, "%s never accepted a connection (%s after %s, %d attempts; last: %v): nothing listens there — a replica still loading or down, or a wrong URL", addr, why, time.Since(p.start).Round(time.Millisecond), attempts, lastErr)
				return false
			}
			p.check("listen", false, Loading, "%s did not listen (%s after %s, %d attempts; last: %v)", addr, why, time.Since(p.start).Round(time.Millisecond), attempts, lastErr)
			return false
		}
		wait = min(wait*2, MaxPollInterval)
	}
}

func (p *prober) get(ctx context.Context, path string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.o.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	p.authorize(req)
	resp, err := p.o.HTTPClient.Do(req)
	if err != nil {
		if be := budgetSpent(ctx); be != nil {
			return 0, nil, be
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if be := budgetSpent(ctx); err != nil && be != nil {
		return resp.StatusCode, nil, be
	}
	if err == nil && len(body) > MaxBodyBytes {
		return resp.StatusCode, nil, fmt.Errorf("body %w of %d bytes (not judged)", errTooLarge, MaxBodyBytes)
	}
	return resp.StatusCode, body, err
}

// getSettled is get, asked up to three times when the request itself failed (no HTTP answer)
// while the engine's process lives: one refused or timed-out connection on a loaded machine is not
// an engine death, and a dead engine keeps failing all three. An HTTP answer, whatever its
// status, a spent budget and an exited process are final at once.
func (p *prober) getSettled(ctx context.Context, path string) (int, []byte, error) {
	var (
		code int
		body []byte
		err  error
	)
	for i, pause := range []time.Duration{0, 200 * time.Millisecond, 600 * time.Millisecond} {
		if i > 0 && wait.Sleep(ctx, pause) != nil {
			return code, body, err
		}
		code, body, err = p.get(ctx, path)
		if err == nil || code != 0 || budgetSpent(ctx) != nil || ctx.Err() != nil || p.exited() {
			return code, body, err
		}
	}
	return code, body, err
}

func (p *prober) health(ctx context.Context, name string) bool {
	code, _, err := p.getSettled(ctx, "/health")
	switch {
	case err != nil:
		if p.awaitExit(2 * time.Second) {
			p.exitCheck()
			return false
		}
		if v, what := connVerdict(err); v != "" {
			return p.check(name, false, v, "GET /health: %s", what)
		}
		return p.check(name, false, EngineDead, "GET /health: %v", err)
	case code == http.StatusOK:
		return p.check(name, true, "", "GET /health: 200")
	case code == http.StatusServiceUnavailable:
		return p.check(name, false, EngineDead, "GET /health: 503 (engine dead)")
	default:
		return p.check(name, false, EngineDead, "GET /health: %d (want 200)", code)
	}
}

type modelCard struct {
	ID     string  `json:"id"`
	Parent *string `json:"parent"`
}

func (p *prober) models(ctx context.Context) (string, bool) {
	code, body, err := p.get(ctx, "/v1/models")
	if err == nil && isAuthStatus(code) {
		msg, _ := apiErrorMessage(body)
		p.check("models", false, AuthFailed, "GET /v1/models: %s", p.authMessage(code, msg))
		return "", false
	}
	if err != nil || code != http.StatusOK {
		if err == nil {
			err = fmt.Errorf("HTTP %d: %s", code, snippet(body))
		}
		p.check("models", false, ModelMissing, "GET /v1/models: %v", err)
		return "", false
	}
	var list struct {
		Data []modelCard `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		p.check("models", false, ModelMissing, "GET /v1/models: not a model list: %v", err)
		return "", false
	}
	cards := map[string]modelCard{}
	var bases, ids []string
	for _, c := range list.Data {
		cards[c.ID] = c
		ids = append(ids, c.ID)
		if c.Parent == nil {
			bases = append(bases, c.ID)
		}
	}
	want := p.o.Models
	if len(want) == 0 {
		if len(bases) == 0 {
			p.check("models", false, ModelMissing, "GET /v1/models lists no base model (saw %v)", ids)
			return "", false
		}
		want = bases[:1]
	}
	ok := true
	for _, m := range want {
		c, found := cards[m]
		switch {
		case !found:
			ok = p.check("model "+m, false, ModelMissing, "not in /v1/models (saw %v)", ids) && ok
		case c.Parent != nil:
			ok = p.check("model "+m, false, ModelMissing, "listed as an adapter of %q, not a served model", *c.Parent) && ok
		default:
			p.check("model "+m, true, "", "listed")
		}
	}
	for _, l := range p.o.LoRAs {
		c, found := cards[l]
		switch {
		case !found:
			ok = p.check("lora "+l, false, AdapterMissing, "not in /v1/models (saw %v)", ids) && ok
		case c.Parent == nil:
			ok = p.check("lora "+l, false, AdapterMissing, "listed as a base model, not an adapter") && ok
		case !slices.Contains(want, *c.Parent):
			ok = p.check("lora "+l, false, AdapterMissing, "parent %q, want one of %v", *c.Parent, want) && ok
		default:
			p.check("lora "+l, true, "", "listed with parent %q", *c.Parent)
		}
	}
	return want[0], ok
}

// authorize adds the bearer token, when one is configured. Only to the replica's own scheme,
// host and port: SameHostRedirects refuses any other, and net/http drops Authorization on a
// redirect to another host anyway.
func (p *prober) authorize(req *http.Request) {
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
}

// isAuthStatus: vLLM's --api-key middleware answers 401 {"error": "Unauthorized"}; a gateway in
// front of it may answer 403.
func isAuthStatus(code int) bool {
	return code == http.StatusUnauthorized || code == http.StatusForbidden
}

// authMessage says why a 401/403 happened, naming the token's source (never the token).
func (p *prober) authMessage(code int, msg string) string {
	if p.o.Auth.IsZero() {
		return fmt.Sprintf("HTTP %d %s: the replica wants a bearer token (vLLM --api-key or VLLM_API_KEY) and none is configured: name it in the fleet (probe: {api_key_env: NAME} or {api_key_file: PATH}) or with --api-key-env/--api-key-file", code, msg)
	}
	return fmt.Sprintf("HTTP %d %s: the replica refused the bearer token from %s", code, msg, p.o.Auth)
}

// connVerdict names a request error that is not the engine's: a TLS handshake that failed
// (TLS_FAILED, with why) or a connection refused or without a route after the port had listened
// (UNREACHABLE). "" when it is neither.
func connVerdict(err error) (Verdict, string) {
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
		alert     tls.AlertError
		verify    *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &unknownCA):
		return TLSFailed, "certificate not trusted: signed by an authority this host does not trust (" + providers.Sanitize(err.Error(), 200) + ")"
	case errors.As(err, &hostname):
		return TLSFailed, "certificate not valid for this host name (" + providers.Sanitize(hostname.Error(), 200) + ")"
	case errors.As(err, &invalid):
		return TLSFailed, "certificate invalid (" + providers.Sanitize(invalid.Error(), 200) + ")"
	case errors.As(err, &verify):
		return TLSFailed, "certificate not verified (" + providers.Sanitize(verify.Error(), 200) + ")"
	case errors.As(err, &record):
		return TLSFailed, "the server does not speak TLS on this port (is the URL https:// for a plain-HTTP replica?)"
	case errors.As(err, &alert):
		return TLSFailed, "TLS handshake refused by the server (" + providers.Sanitize(err.Error(), 200) + ")"
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return Unreachable, "connection refused or no route (" + providers.Sanitize(err.Error(), 200) + ")"
	}
	return "", ""
}

// awake checks vLLM's sleep mode: GET /is_sleeping ({"is_sleeping": true}; served with
// --enable-sleep-mode and VLLM_SERVER_DEV_MODE=1, else 404) and the vllm:engine_sleep_state gauge
// (sleep_state="awake" 0 on any engine). A sleeping replica is SLEEPING and gets no generation:
// the prober never wakes it (POST /wake_up is an operator's act), and a woken one is held to
// the whole contract like any other, so a woken engine that cannot generate is not WARM.
func (p *prober) awake(ctx context.Context, before scrape) bool {
	var why, seen []string
	if f := before["vllm:engine_sleep_state"]; f != nil {
		seen = append(seen, "vllm:engine_sleep_state awake")
		for _, m := range f.GetMetric() {
			if s, _ := label(m, "sleep_state"); s == "awake" && value(m) == 0 {
				eng, _ := label(m, "engine")
				why = append(why, fmt.Sprintf("vllm:engine_sleep_state{engine=%q,sleep_state=\"awake\"} 0", eng))
			}
		}
	}
	code, body, err := p.get(ctx, "/is_sleeping")
	switch {
	case err != nil:
		// a replica without /is_sleeping that drops the request says nothing about sleep
	case isAuthStatus(code):
		msg, _ := apiErrorMessage(body)
		return p.check("awake", false, AuthFailed, "GET /is_sleeping: %s", p.authMessage(code, msg))
	case code == http.StatusOK:
		var st struct {
			IsSleeping *bool `json:"is_sleeping"`
		}
		if json.Unmarshal(body, &st) == nil && st.IsSleeping != nil {
			seen = append(seen, "GET /is_sleeping false")
			if *st.IsSleeping {
				why = append(why, `GET /is_sleeping: {"is_sleeping": true}`)
			}
		}
	default:
		// 404: sleep mode off (or dev mode off): nothing to learn here
	}
	if len(why) > 0 {
		return p.check("awake", false, Sleeping, "the engine is asleep (vLLM sleep mode): %s; POST /wake_up wakes it", strings.Join(why, "; "))
	}
	if len(seen) == 0 {
		p.skip("awake", "no sleep mode: neither GET /is_sleeping nor vllm:engine_sleep_state answers")
		return true
	}
	return p.check("awake", true, "", "%s", strings.Join(seen, ", "))
}

// snippet is a replica's text as one sanitised, bounded line (providers.Sanitize).
func snippet(b []byte) string {
	return providers.Sanitize(string(b), 300)
}

// apiErrorMessage extracts vLLM's {"error": {"message", "type"}} (or {"message"}) from a body,
// each sanitised (providers.Sanitize): it is a peer's text.
func apiErrorMessage(b []byte) (msg, typ string) {
	msg, typ = rawAPIErrorMessage(b)
	return providers.Sanitize(msg, 300), providers.Sanitize(typ, 64)
}

func rawAPIErrorMessage(b []byte) (msg, typ string) {
	var e struct {
		Error json.RawMessage `json:"error"`
		Msg   string          `json:"message"`
	}
	if json.Unmarshal(b, &e) != nil {
		return snippet(b), ""
	}
	var inner struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if len(e.Error) > 0 && json.Unmarshal(e.Error, &inner) == nil && inner.Message != "" {
		return inner.Message, inner.Type
	}
	var s string
	if len(e.Error) > 0 && json.Unmarshal(e.Error, &s) == nil {
		return s, ""
	}
	if e.Msg != "" {
		return e.Msg, ""
	}
	return snippet(b), ""
}
