package providers

import (
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// Request logging for -v, in the spirit of restic's backend/logger but one level down: every HTTP
// request a store makes is one debug line — method, host, key (the URL path, never the query, which
// may carry a SAS), status, attempt and duration — and a failed attempt the SDK will retry says so
// as it happens. Headers and bodies are never logged.
//
// Retries: the SDKs are the one retry layer for requests (S3 3 attempts, Azure 4, GCS
// DefaultGCSMaxAttempts; see RetryOptions), WithRetry the one for broken read bodies (see
// retry.go). Nothing here retries; it only makes their retries visible, so that a slow command
// is never silent.

type logTransport struct {
	next http.RoundTripper
	log  *slog.Logger
	mu   sync.Mutex
	seen map[string]int // Azure: attempts per x-ms-client-request-id (kept across its retries)
}

// NewLogTransport logs each request through next (nil: http.DefaultTransport) to log, as
// LoggingTransport does; an S3 or Azure SDK takes it as its HTTP client (Do).
func NewLogTransport(next http.RoundTripper, log *slog.Logger) *logTransport {
	if next == nil {
		next = http.DefaultTransport
	}
	return &logTransport{next: next, log: log, seen: map[string]int{}}
}

// Do lets the transport serve as an S3 or Azure HTTP client.
func (t *logTransport) Do(req *http.Request) (*http.Response, error) { return t.RoundTrip(req) }

var (
	amzAttemptRE  = regexp.MustCompile(`attempt=(\d+)(?:;\s*max=(\d+))?`)
	googAttemptRE = regexp.MustCompile(`gccl-attempt-count/(\d+)`)
)

// attempt is the SDK's attempt number of req, when the SDK says it (S3 amz-sdk-request, GCS
// x-goog-api-client) or it can be counted (Azure's client request id), and the maximum if known.
func (t *logTransport) attempt(req *http.Request) (n, max int) {
	if m := amzAttemptRE.FindStringSubmatch(req.Header.Get("amz-sdk-request")); m != nil {
		n, _ = strconv.Atoi(m[1])
		max, _ = strconv.Atoi(m[2])
		return n, max
	}
	if m := googAttemptRE.FindStringSubmatch(req.Header.Get("x-goog-api-client")); m != nil {
		n, _ = strconv.Atoi(m[1])
		return n, 0
	}
	if id := req.Header.Get("x-ms-client-request-id"); id != "" {
		t.mu.Lock()
		defer t.mu.Unlock()
		if len(t.seen) > 4096 {
			clear(t.seen)
		}
		t.seen[id]++
		return t.seen[id], 0
	}
	return 1, 0
}

func (t *logTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	n, max := t.attempt(req)
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	key, uerr := url.PathUnescape(req.URL.EscapedPath())
	if uerr != nil {
		key = req.URL.EscapedPath()
	}
	attrs := []any{"method", req.Method, "host", req.URL.Host, "key", key, "attempt", n}
	if max > 0 {
		attrs = append(attrs, "max_attempts", max)
	}
	attrs = append(attrs, "ms", time.Since(start).Milliseconds())
	ctx := req.Context()
	switch {
	case err != nil:
		t.log.DebugContext(ctx, "request", append(attrs, "error", Sanitize(Describe(err), 200))...)
		if ctx.Err() == nil {
			t.log.InfoContext(ctx, "request failed; the SDK retries it unless this was its last attempt", "method", req.Method, "host", req.URL.Host, "attempt", n)
		}
	default:
		t.log.DebugContext(ctx, "request", append(attrs, "status", resp.StatusCode)...)
		if resp.StatusCode == 429 || resp.StatusCode >= 500 {
			t.log.InfoContext(ctx, "request failed; the SDK retries it unless this was its last attempt", "method", req.Method, "host", req.URL.Host, "status", resp.StatusCode, "attempt", n)
		}
	}
	return resp, err
}

// doer is what the S3 and Azure SDKs take as an HTTP client.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// DoerTransport adapts an SDK's HTTP client to a RoundTripper.
type DoerTransport struct{ D Doer }

func (t DoerTransport) RoundTrip(req *http.Request) (*http.Response, error) { return t.D.Do(req) }

// LoggingTransport logs every request through next (nil: http.DefaultTransport) as stores do
// with Options.Log: method, host, path, status, attempt, duration; never a header or a query.
// Probes of replicas use it for -v.
func LoggingTransport(next http.RoundTripper, log *slog.Logger) http.RoundTripper {
	return NewLogTransport(next, log)
}
