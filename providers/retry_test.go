//go:build integration

package providers_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lifeboat/providers"

	"github.com/aws/aws-sdk-go-v2/credentials"
)

// scripted answers the first `fail` requests with status (or a refused connection when status is
// 0) and the rest with ok, counting requests. No network is involved.
type scripted struct {
	mu     sync.Mutex
	calls  int
	fail   int
	status int
	ok     func(*http.Request) *http.Response
}

func (s *scripted) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	if n <= s.fail {
		if s.status == 0 {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
		return respond(r, s.status, nil, ""), nil
	}
	return s.ok(r), nil
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func respond(r *http.Request, status int, h map[string]string, body string) *http.Response {
	resp := &http.Response{
		StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r,
	}
	for k, v := range h {
		resp.Header.Set(k, v)
	}
	if r.Method == http.MethodHead {
		resp.Body = http.NoBody
	}
	return resp
}

// statOK is a successful metadata answer in each provider's dialect.
var statOK = map[string]func(*http.Request) *http.Response{
	"s3": func(r *http.Request) *http.Response {
		return respond(r, 200, map[string]string{"Content-Length": "5", "ETag": `"5d41402abc4b2a76b9719d911017c592"`, "Last-Modified": "Mon, 02 Jan 2026 15:04:05 GMT"}, "")
	},
	"az": func(r *http.Request) *http.Response {
		return respond(r, 200, map[string]string{"Content-Length": "5", "ETag": `"0x8D"`, "x-ms-blob-type": "BlockBlob", "Last-Modified": "Mon, 02 Jan 2026 15:04:05 GMT"}, "")
	},
	"gs": func(r *http.Request) *http.Response {
		return respond(r, 200, map[string]string{"Content-Type": "application/json"},
			`{"kind":"storage#object","name":"p/k","bucket":"bucket","size":"5","generation":"7","crc32c":"mnG7TA==","md5Hash":"XUFAKrxLKna5cZ2REBfFkg==","updated":"2026-01-02T15:04:05Z"}`)
	},
}

func retryStore(t *testing.T, provider string, tr http.RoundTripper, retry providers.RetryOptions) providers.Store {
	o := providers.Options{HTTPClient: &http.Client{Transport: tr}, Retry: retry}
	var u string
	switch provider {
	case "s3":
		u = "s3://bucket/p?region=us-east-1&endpoint=http://127.0.0.1:9"
		o.S3Credentials = credentials.NewStaticCredentialsProvider("AK", "SK", "")
	case "az":
		u = "az://devstoreaccount1/cont/p"
		o.AzureConnectionString = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + wrongAzureKey + ";BlobEndpoint=http://127.0.0.1:9/devstoreaccount1;"
	case "gs":
		u = "gs://bucket/p"
	}
	return open(t, u, o)
}

var fastRetry = providers.RetryOptions{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}

// The SDK retryers carry transient failures, give up after the configured attempts, and do not
// retry what retrying cannot fix.
func TestRetries(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"s3", "gs", "az"} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name      string
				fail      int
				status    int
				retry     providers.RetryOptions
				want      error // nil: success
				wantCalls int
			}{
				{"503 burst then ok", 2, 503, fastRetry, nil, 3},
				{"429 burst then ok", 2, 429, fastRetry, nil, 3},
				{"persistent 503", 1000, 503, fastRetry, providers.ErrUnreachable, 3},
				{"persistent 500", 1000, 500, fastRetry, providers.ErrUnreachable, 3},
				{"connection refused", 1000, 0, fastRetry, providers.ErrUnreachable, 3},
				{"403 not retried", 1000, 403, fastRetry, providers.ErrPermission, 1},
				{"404 not retried", 1000, 404, fastRetry, providers.ErrNotFound, 1},
				{"one attempt only", 1000, 503, providers.RetryOptions{MaxAttempts: 1}, providers.ErrUnreachable, 1},
			} {
				tr := &scripted{fail: tc.fail, status: tc.status, ok: statOK[p]}
				s := retryStore(t, p, tr, tc.retry)
				start := time.Now()
				obj, err := s.Stat(t.Context(), "k")
				switch {
				case tc.want == nil && (err != nil || obj.Size != 5):
					t.Errorf("%s: %+v, %v", tc.name, obj, err)
				case tc.want != nil && !errors.Is(err, tc.want):
					t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
				}
				if got := tr.count(); got != tc.wantCalls {
					t.Errorf("%s: %d requests, want %d (err %v)", tc.name, got, tc.wantCalls, err)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("%s took %s", tc.name, d)
				}
			}
		})
	}
}

// GCS retries idempotent calls forever by default; the store bounds it.
func TestGCSDefaultRetryIsBounded(t *testing.T) {
	t.Parallel()
	tr := &scripted{fail: 1 << 30, status: 503, ok: statOK["gs"]}
	s := retryStore(t, "gs", tr, providers.RetryOptions{InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
	_, err := s.Stat(t.Context(), "k")
	if !errors.Is(err, providers.ErrUnreachable) {
		t.Fatalf("got %v", err)
	}
	if got := tr.count(); got != providers.DefaultGCSMaxAttempts {
		t.Fatalf("%d attempts, want %d", got, providers.DefaultGCSMaxAttempts)
	}
}
