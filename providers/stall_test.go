//go:build integration

package providers_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"lifeboat/internal/testbed"
	"lifeboat/providers"
)

// resetBodies breaks every object download before its first byte, the way a flaky middlebox
// would; everything else passes through.
type resetBodies struct {
	next      http.RoundTripper
	downloads atomic.Int32
}

func (r *resetBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	// Downloads are JSON-API GETs with alt=media, or XML-API GETs (paths outside /storage/v1/).
	download := req.Method == http.MethodGet &&
		(req.URL.Query().Get("alt") == "media" || !strings.Contains(req.URL.Path, "/storage/v1/"))
	if err != nil || !download {
		return resp, err
	}
	r.downloads.Add(1)
	resp.Body.Close()
	resp.Body = io.NopCloser(errReaderAt{})
	return resp, nil
}

type errReaderAt struct{}

func (errReaderAt) Read([]byte) (int, error) { return 0, errors.New("connection reset by peer") }

// The GCS SDK re-opens a broken download by itself, without a bound; a body that breaks every
// time must end as ErrUnreachable, not hang.
func TestGCSReadThatNeverProgressesEndsUnreachable(t *testing.T) {
	t.Parallel()
	sharedGCS(t)
	good := open(t, "gs://"+testBucket+"/stall-"+freshPrefix(), testOptions())
	if _, err := good.Write(t.Context(), "x", strings.NewReader("hello"), providers.WriteOptions{Size: 5}); err != nil {
		t.Fatal(err)
	}
	rt := &resetBodies{next: http.DefaultTransport}
	opts := testOptions()
	opts.HTTPClient = &http.Client{Transport: rt}
	opts.Retry.StallTimeout = 300 * time.Millisecond
	bad := open(t, good.String(), opts)
	err := bad.Read(t.Context(), "x", providers.ReadOptions{}, func(r io.Reader) error {
		_, err := io.ReadAll(r)
		return err
	})
	if !errors.Is(err, providers.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	if rt.downloads.Load() < 2 {
		t.Fatalf("the SDK re-opened the body %d times; the test does not exercise the re-open loop", rt.downloads.Load())
	}
}

// hangBodies hands out the first bytes of every download of key, then blocks until the request
// is cancelled: a peer that stops sending mid-body.
type hangBodies struct {
	next http.RoundTripper
	key  string
	hung atomic.Int32
}

func (h *hangBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || !strings.Contains(req.URL.Path, h.key) || resp.StatusCode/100 != 2 {
		return resp, err
	}
	h.hung.Add(1)
	resp.Body = &hungBody{ReadCloser: resp.Body, ctx: req.Context()}
	return resp, nil
}

type hungBody struct {
	io.ReadCloser
	ctx  context.Context
	sent bool
}

func (b *hungBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return b.ReadCloser.Read(p[:min(len(p), 4)])
	}
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

// The stall guard is one wrapper that Open puts around every store: a body that stops mid-way
// ends as ErrUnreachable (cause ErrStalled) on each cloud provider, whatever its SDK does.
func TestStallGuardOnEveryStore(t *testing.T) {
	for _, b := range []*testbed.Backend{testbed.S3Backend(t), testbed.GCSBackend(t), testbed.AzureBackend(t)} {
		t.Run(b.Name, func(t *testing.T) {
			prefix := testbed.FreshPrefix("stall")
			testbed.Put(t, b.Open(t, prefix, nil), "hung-object", []byte("hello, stalled world"), providers.Checksums{})
			rt := &hangBodies{next: http.DefaultTransport, key: "hung-object"}
			s := providers.WithStallGuard(b.Open(t, prefix, &http.Client{Transport: rt}), 300*time.Millisecond)
			var got []byte
			err := s.Read(testbed.Ctx(t), "hung-object", providers.ReadOptions{}, func(r io.Reader) error {
				var err error
				got, err = io.ReadAll(r)
				return err
			})
			if !errors.Is(err, providers.ErrUnreachable) || !errors.Is(err, providers.ErrStalled) {
				t.Fatalf("err = %v, want ErrUnreachable and ErrStalled", err)
			}
			if rt.hung.Load() == 0 || len(got) > 4 {
				t.Fatalf("the body was not hung (%d hung responses, %d bytes read)", rt.hung.Load(), len(got))
			}
		})
	}
}
