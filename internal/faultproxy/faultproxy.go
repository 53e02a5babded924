package faultproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"lifeboat/internal/base/wait"
)

// Op is what a request does, as far as a storage test cares.
type Op string

const (
	OpList  Op = "list"  // S3 ListObjectsV2, Azure List Blobs, GCS objects.list
	OpStat  Op = "stat"  // S3/Azure HEAD, GCS objects.get without alt=media
	OpRead  Op = "read"  // object GETs (whole or ranged)
	OpWrite Op = "write" // PUT, POST, PATCH, DELETE
	OpOther Op = "other"
)

// Classify tells what a request to S3 (path-style), Azure Blob or GCS (JSON or XML API) does.
func Classify(r *http.Request) Op {
	q := r.URL.Query()
	p := r.URL.Path
	switch r.Method {
	case http.MethodPut, http.MethodPost, http.MethodPatch, http.MethodDelete:
		return OpWrite
	case http.MethodHead:
		return OpStat
	case http.MethodGet:
	default:
		return OpOther
	}
	switch {
	case strings.HasPrefix(p, "/download/storage/v1/"):
		return OpRead
	case strings.HasPrefix(p, "/storage/v1/b/"):
		// /storage/v1/b/BUCKET/o is a listing, /storage/v1/b/BUCKET/o/NAME an object.
		rest := strings.TrimPrefix(p, "/storage/v1/b/")
		_, obj, _ := strings.Cut(rest, "/o")
		switch {
		case obj == "" || obj == "/":
			return OpList
		case q.Get("alt") == "media":
			return OpRead
		}
		return OpStat
	case q.Has("list-type"), q.Get("comp") == "list":
		return OpList
	case q.Has("comp"), q.Has("restype"), q.Has("uploads"), q.Has("location"):
		return OpOther
	}
	// Path-style S3 or Azure: /BUCKET is the bucket itself (a v1 listing), /BUCKET/KEY an object.
	if strings.Count(strings.Trim(p, "/"), "/") == 0 {
		return OpList
	}
	return OpRead
}

// Match selects requests.
type Match func(*http.Request) bool

// Ops matches requests of the given kinds.
func Ops(ops ...Op) Match {
	return func(r *http.Request) bool {
		op := Classify(r)
		for _, o := range ops {
			if o == op {
				return true
			}
		}
		return false
	}
}

// PathContains matches requests whose unescaped URL path contains s.
func PathContains(s string) Match {
	return func(r *http.Request) bool { return strings.Contains(r.URL.Path, s) }
}

// All matches requests every given Match accepts (none: every request).
func All(ms ...Match) Match {
	return func(r *http.Request) bool {
		for _, m := range ms {
			if m != nil && !m(r) {
				return false
			}
		}
		return true
	}
}

// Rule is one fault: which requests, how many of them, and what happens.
type Rule struct {
	Match Match // nil: every request
	// Skip lets the first Skip matching requests through untouched.
	Skip int
	// Times is how many matching requests (after Skip) get the fault; 0 means all of them
	// (a persistent fault).
	Times  int
	Action Action

	seen  atomic.Int64
	fired atomic.Int64
}

// Fired is how many requests the rule has affected.
func (r *Rule) Fired() int { return int(r.fired.Load()) }

// take reports whether this request gets the fault, counting it.
func (r *Rule) take(req *http.Request) bool {
	if r.Match != nil && !r.Match(req) {
		return false
	}
	n := r.seen.Add(1)
	if n <= int64(r.Skip) {
		return false
	}
	if r.Times > 0 && n > int64(r.Skip+r.Times) {
		return false
	}
	r.fired.Add(1)
	return true
}

// Injector applies rules to requests and counts requests by Op.
type Injector struct {
	mu     sync.Mutex
	rules  []*Rule
	counts map[Op]int
	// Latency added to every request (before it is sent on) and to every response (before its
	// headers reach the client): a WAN link on loopback. Set with SetLatency.
	reqDelay, respDelay time.Duration
}

// SetLatency makes every request wait req before it goes on to the server and every response
// wait resp before it reaches the client — 40 ms each way is a region 80 ms round trip away.
// Faults still apply; a request whose context ends while it waits fails with that error.
func (in *Injector) SetLatency(req, resp time.Duration) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.reqDelay, in.respDelay = req, resp
}

func (in *Injector) latency() (req, resp time.Duration) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.reqDelay, in.respDelay
}

// sleep waits d (none when d <= 0, even for an ended ctx: a rule without latency passes the
// request on untouched) or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	return wait.Sleep(ctx, d)
}

// New returns an Injector with the given rules.
func New(rules ...*Rule) *Injector {
	return &Injector{rules: rules, counts: map[Op]int{}}
}

// Add appends a rule and returns it (to read Fired later).
func (in *Injector) Add(r *Rule) *Rule {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.rules = append(in.rules, r)
	return r
}

// Clear removes every rule.
func (in *Injector) Clear() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.rules = nil
}

// Counts returns how many requests of each Op passed through since the last ResetCounts,
// faulted or not.
func (in *Injector) Counts() map[Op]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[Op]int, len(in.counts))
	for k, v := range in.counts {
		out[k] = v
	}
	return out
}

// ResetCounts zeroes the request counts.
func (in *Injector) ResetCounts() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.counts = map[Op]int{}
}

// pick counts the request and returns the action that applies to it, or nil.
func (in *Injector) pick(r *http.Request) Action {
	in.mu.Lock()
	in.counts[Classify(r)]++
	rules := in.rules
	in.mu.Unlock()
	for _, rule := range rules {
		if rule.take(r) {
			return rule.Action
		}
	}
	return nil
}

// Action is what happens to a faulted request. Build one with Status, Reset, Truncate, Shorten,
// Header or Body.
type Action interface {
	// client applies the action in a RoundTripper; next performs the real request.
	client(req *http.Request, next func() (*http.Response, error)) (*http.Response, error)
	// server applies the action in a handler; next serves the request into w.
	server(w http.ResponseWriter, req *http.Request, next http.Handler)
}

// ---------------------------------------------------------------------------------------------
// Status: answer with an error without reaching the server.

type statusAction struct {
	code       int
	retryAfter string
}

// Status answers with HTTP code (503, 429, 500…) and, if retryAfter is not "", a Retry-After
// header (seconds, as servers send it). The body is the provider's error document — S3 XML
// (SlowDown for 503/429, AccessDenied for 403), Azure XML (ServerBusy, AuthorizationFailure) or
// GCS JSON, told apart by the request — so that each SDK classifies and retries it as it would
// the real thing.
func Status(code int, retryAfter string) Action { return statusAction{code, retryAfter} }

func (a statusAction) response(req *http.Request) (http.Header, []byte) {
	h := http.Header{}
	if a.retryAfter != "" {
		h.Set("Retry-After", a.retryAfter)
	}
	msg := http.StatusText(a.code)
	var body []byte
	switch {
	case isGCS(req):
		h.Set("Content-Type", "application/json; charset=UTF-8")
		body = fmt.Appendf(nil, `{"error":{"code":%d,"message":%q,"errors":[{"message":%q,"domain":"global","reason":"backendError"}]}}`, a.code, msg, msg)
	case req.Header.Get("x-ms-version") != "":
		code := "InternalError"
		switch a.code {
		case 503, 429:
			code = "ServerBusy"
		case 403:
			code = "AuthorizationFailure"
		case 404:
			code = "ContainerNotFound"
		}
		h.Set("Content-Type", "application/xml")
		h.Set("x-ms-error-code", code)
		body = fmt.Appendf(nil, `<?xml version="1.0" encoding="utf-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
	default:
		code := "InternalError"
		switch a.code {
		case 503, 429:
			code = "SlowDown"
		case 403:
			code = "AccessDenied"
		case 404:
			code = "NoSuchBucket"
		}
		h.Set("Content-Type", "application/xml")
		body = fmt.Appendf(nil, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>faultproxy</RequestId></Error>`, code, msg)
	}
	if req.Method == http.MethodHead {
		body = nil
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return h, body
}

func isGCS(req *http.Request) bool {
	p := req.URL.Path
	return strings.HasPrefix(p, "/storage/v1/") || strings.HasPrefix(p, "/upload/storage/") ||
		strings.HasPrefix(p, "/download/storage/") || req.Header.Get("x-goog-api-client") != ""
}

func (a statusAction) client(req *http.Request, _ func() (*http.Response, error)) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	h, body := a.response(req)
	return &http.Response{
		Status: fmt.Sprintf("%d %s", a.code, http.StatusText(a.code)), StatusCode: a.code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}, nil
}

func (a statusAction) server(w http.ResponseWriter, req *http.Request, _ http.Handler) {
	h, body := a.response(req)
	for k, v := range h {
		w.Header()[k] = v
	}
	w.WriteHeader(a.code)
	_, _ = w.Write(body)
}

// ---------------------------------------------------------------------------------------------
// Reset, Truncate, Shorten: forward, then break the body after n bytes.

type cutKind int

const (
	cutReset    cutKind = iota // the connection is reset: ECONNRESET
	cutTruncate                // the connection closes early: unexpected EOF
	cutShorten                 // Content-Length is rewritten to n: a clean but short body
)

type cutAction struct {
	kind cutKind
	n    int64
}

// Reset forwards the request and resets the connection after n bytes of the response body (the
// client sees ECONNRESET). Responses of n bytes or fewer pass untouched.
func Reset(n int64) Action { return cutAction{cutReset, n} }

// Truncate forwards the request and closes the connection after n bytes of the body while the
// Content-Length promises more (the client sees io.ErrUnexpectedEOF).
func Truncate(n int64) Action { return cutAction{cutTruncate, n} }

// Shorten forwards the request and delivers only the first n bytes of the body with a
// Content-Length of n: a well-formed response that lacks the rest, as a buggy proxy might send.
// Only a client that checks lengths or checksums notices.
func Shorten(n int64) Action { return cutAction{cutShorten, n} }

var errReset = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}

func (a cutAction) client(req *http.Request, next func() (*http.Response, error)) (*http.Response, error) {
	resp, err := next()
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength >= 0 && resp.ContentLength <= a.n {
		return resp, nil
	}
	if a.kind == cutShorten {
		resp.ContentLength = a.n
		resp.Header.Set("Content-Length", strconv.FormatInt(a.n, 10))
	}
	resp.Body = &cutBody{rc: resp.Body, left: a.n, kind: a.kind}
	return resp, nil
}

type cutBody struct {
	rc   io.ReadCloser
	left int64
	kind cutKind
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		switch b.kind {
		case cutReset:
			return 0, errReset
		case cutTruncate:
			return 0, io.ErrUnexpectedEOF
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if err == io.EOF {
		return n, io.EOF // the body was shorter than the cut anyway
	}
	return n, err
}

func (b *cutBody) Close() error { return b.rc.Close() }

func (a cutAction) server(w http.ResponseWriter, req *http.Request, next http.Handler) {
	cw := &cutWriter{ResponseWriter: w, left: a.n, kind: a.kind}
	defer func() {
		if cw.cut {
			cw.abort() // does not return for resets and truncations
		}
	}()
	next.ServeHTTP(cw, req)
}

// cutWriter passes the first n body bytes, then drops the rest and breaks the connection.
type cutWriter struct {
	http.ResponseWriter
	left        int64
	kind        cutKind
	wroteHeader bool
	cut         bool
}

func (c *cutWriter) WriteHeader(code int) {
	if c.wroteHeader {
		return
	}
	c.wroteHeader = true
	if cl, err := strconv.ParseInt(c.Header().Get("Content-Length"), 10, 64); err == nil && cl <= c.left {
		c.left = 1<<62 - 1 // short enough: pass untouched
	} else if c.kind == cutShorten {
		c.Header().Set("Content-Length", strconv.FormatInt(c.left, 10))
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if !c.wroteHeader {
		c.WriteHeader(http.StatusOK)
	}
	if c.cut {
		return len(p), nil // swallow the rest; the connection is broken on return
	}
	if int64(len(p)) > c.left {
		n, err := c.ResponseWriter.Write(p[:c.left])
		c.left -= int64(n)
		c.cut = true
		if err != nil {
			return n, err
		}
		return len(p), nil
	}
	n, err := c.ResponseWriter.Write(p)
	c.left -= int64(n)
	return n, err
}

func (c *cutWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *cutWriter) abort() {
	rc := http.NewResponseController(c.ResponseWriter)
	_ = rc.Flush()
	if c.kind == cutShorten {
		return // the short body is complete as far as HTTP is concerned
	}
	if c.kind == cutReset {
		if conn, _, err := rc.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // close with RST
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // the server closes the connection mid-body
}

// ---------------------------------------------------------------------------------------------
// Header and Body: forward, then alter the response.

type headerAction struct{ fn func(http.Header) }

// Header forwards the request and lets fn alter the response headers (for example a changed
// x-amz-checksum-crc64nvme, Content-MD5 or x-goog-hash).
func Header(fn func(h http.Header)) Action { return headerAction{fn} }

func (a headerAction) client(_ *http.Request, next func() (*http.Response, error)) (*http.Response, error) {
	resp, err := next()
	if err == nil {
		a.fn(resp.Header)
	}
	return resp, err
}

func (a headerAction) server(w http.ResponseWriter, req *http.Request, next http.Handler) {
	next.ServeHTTP(&headerWriter{ResponseWriter: w, fn: a.fn}, req)
}

type headerWriter struct {
	http.ResponseWriter
	fn   func(http.Header)
	done bool
}

func (h *headerWriter) WriteHeader(code int) {
	if !h.done {
		h.done = true
		h.fn(h.Header())
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *headerWriter) Write(p []byte) (int, error) {
	if !h.done {
		h.WriteHeader(http.StatusOK)
	}
	return h.ResponseWriter.Write(p)
}

type bodyAction struct{ fn func([]byte) []byte }

// Body forwards the request, reads the whole response body and replaces it with fn's result
// (Content-Length adjusted) — to alter checksums carried in listing documents.
func Body(fn func(body []byte) []byte) Action { return bodyAction{fn} }

func (a bodyAction) client(_ *http.Request, next func() (*http.Response, error)) (*http.Response, error) {
	resp, err := next()
	if err != nil || resp.Body == nil {
		return resp, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	data = a.fn(data)
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	resp.Header.Set("Content-Length", strconv.Itoa(len(data)))
	resp.Header.Del("Content-Encoding")
	resp.Uncompressed = true
	return resp, nil
}

func (a bodyAction) server(w http.ResponseWriter, req *http.Request, next http.Handler) {
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	next.ServeHTTP(rec, req)
	data := a.fn(rec.body.Bytes())
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(rec.code)
	_, _ = w.Write(data)
}

type recorder struct {
	header http.Header
	body   bytes.Buffer
	code   int
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	r.wrote = true
	return r.body.Write(p)
}

// ---------------------------------------------------------------------------------------------
// Placement: client transport, server middleware, reverse proxy.

type transport struct {
	in   *Injector
	base http.RoundTripper
}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	reqDelay, respDelay := t.in.latency()
	next := func() (*http.Response, error) {
		if err := sleep(req.Context(), reqDelay); err != nil {
			return nil, err
		}
		resp, err := t.base.RoundTrip(req)
		if err == nil {
			if werr := sleep(req.Context(), respDelay); werr != nil {
				resp.Body.Close()
				return nil, werr
			}
		}
		return resp, err
	}
	if a := t.in.pick(req); a != nil {
		return a.client(req, next)
	}
	return next()
}

// Transport returns a RoundTripper that applies the rules in front of base (nil: a fresh clone
// of http.DefaultTransport, so tests do not share connections).
func (in *Injector) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	return transport{in: in, base: base}
}

// Client returns an *http.Client that applies the rules (for providers.Options.HTTPClient).
func (in *Injector) Client() *http.Client {
	return &http.Client{Transport: in.Transport(nil)}
}

// Handler wraps a server handler so that the rules apply on the server side of real connections.
func (in *Injector) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqDelay, respDelay := in.latency()
		if err := sleep(r.Context(), reqDelay); err != nil {
			return
		}
		if respDelay > 0 {
			w = &delayedWriter{ResponseWriter: w, ctx: r.Context(), d: respDelay}
		}
		if a := in.pick(r); a != nil {
			a.server(w, r, next)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// delayedWriter holds a response's headers back for d: the response leg of the added latency.
type delayedWriter struct {
	http.ResponseWriter
	ctx    context.Context
	d      time.Duration
	waited bool
}

func (w *delayedWriter) wait() {
	if !w.waited {
		w.waited = true
		_ = sleep(w.ctx, w.d)
	}
}

func (w *delayedWriter) WriteHeader(code int) {
	w.wait()
	w.ResponseWriter.WriteHeader(code)
}

func (w *delayedWriter) Write(p []byte) (int, error) {
	w.wait()
	return w.ResponseWriter.Write(p)
}

// Flush sends what is buffered (after the delay).
func (w *delayedWriter) Flush() {
	w.wait()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (flush, hijack).
func (w *delayedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ---------------------------------------------------------------------------------------------
// DropAnswer: the request reaches the server and takes effect; its answer is lost.

type dropAction struct{}

// DropAnswer forwards the request (so a write lands) and then resets the connection instead of
// answering: the client sees a connection error, and an SDK that retries sends the request again
// against the new state (a conditional create then answers 412).
func DropAnswer() Action { return dropAction{} }

func (dropAction) client(req *http.Request, next func() (*http.Response, error)) (*http.Response, error) {
	resp, err := next()
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return nil, fmt.Errorf("faultproxy: answer to %s %s dropped: %w", req.Method, req.URL.Path, syscall.ECONNRESET)
}

func (dropAction) server(w http.ResponseWriter, req *http.Request, next http.Handler) {
	rec := &recorder{header: http.Header{}}
	next.ServeHTTP(rec, req)
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = conn.Close()
		return
	}
	panic(http.ErrAbortHandler)
}
