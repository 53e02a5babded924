package providers_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
