package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, url string
		want        Op
	}{
		{"GET", "http://h/bucket?list-type=2&prefix=a%2F", OpList},                      // S3 ListObjectsV2
		{"GET", "http://h/bucket", OpList},                                              // S3 v1 listing
		{"HEAD", "http://h/bucket/a/b", OpStat},                                         // S3/Azure object HEAD
		{"GET", "http://h/bucket/a/b", OpRead},                                          // S3 GetObject, GCS XML read
		{"PUT", "http://h/bucket/a/b?partNumber=1&uploadId=x", OpWrite},                 // S3 UploadPart
		{"POST", "http://h/bucket/a/b?uploads", OpWrite},                                // S3 CreateMultipartUpload
		{"GET", "http://h/devstoreaccount1/c?restype=container&comp=list", OpList},      // Azure List Blobs
		{"GET", "http://h/devstoreaccount1/c/a/b", OpRead},                              // Azure Get Blob
		{"GET", "http://h/devstoreaccount1/c/a/b?comp=blocklist", OpOther},              // Azure Get Block List
		{"GET", "http://h/storage/v1/b/bucket/o?prefix=a%2F", OpList},                   // GCS objects.list
		{"GET", "http://h/storage/v1/b/bucket/o/a%2Fb", OpStat},                         // GCS objects.get
		{"GET", "http://h/storage/v1/b/bucket/o/a%2Fb?alt=media", OpRead},               // GCS JSON read
		{"GET", "http://h/download/storage/v1/b/bucket/o/a%2Fb?alt=media", OpRead},      // GCS download
		{"POST", "http://h/upload/storage/v1/b/bucket/o?uploadType=resumable", OpWrite}, // GCS upload
	} {
		r := httptest.NewRequest(c.method, c.url, nil)
		if got := Classify(r); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.method, c.url, got, c.want)
		}
	}
}

// Skip and Times select which matching requests get the fault; Fired counts them.
func TestRuleCounting(t *testing.T) {
	rule := &Rule{Match: Ops(OpRead), Skip: 1, Times: 2, Action: Status(503, "1")}
	in := New(rule)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	c := in.Client()
	var codes []int
	for range 5 {
		resp, err := c.Get(srv.URL + "/bucket/key")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == 503 && resp.Header.Get("Retry-After") != "1" {
			t.Errorf("no Retry-After on the 503")
		}
	}
	if want := []int{200, 503, 503, 200, 200}; !equalInts(codes, want) {
		t.Errorf("codes %v, want %v", codes, want)
	}
	if rule.Fired() != 2 || in.Counts()[OpRead] != 5 {
		t.Errorf("fired %d, counts %v", rule.Fired(), in.Counts())
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Status answers in each provider's error format.
func TestStatusBodies(t *testing.T) {
	for _, c := range []struct {
		req  func() *http.Request
		want string
	}{
		{func() *http.Request { return httptest.NewRequest("GET", "http://h/b/k", nil) }, "<Code>SlowDown</Code>"},
		{func() *http.Request {
			r := httptest.NewRequest("GET", "http://h/acct/c/k", nil)
			r.Header.Set("x-ms-version", "2025-01-05")
			return r
		}, "<Code>ServerBusy</Code>"},
		{func() *http.Request { return httptest.NewRequest("GET", "http://h/storage/v1/b/b/o", nil) }, `"code":503`},
	} {
		rec := httptest.NewRecorder()
		New(&Rule{Action: Status(503, "")}).Handler(http.NotFoundHandler()).ServeHTTP(rec, c.req())
		if rec.Code != 503 || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%d %q, want 503 with %q", rec.Code, rec.Body.String(), c.want)
		}
	}
}

// The body faults, client side and server side (on a real connection).
func TestBodyFaults(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	origin := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "1048576")
		w.Header().Set("x-amz-checksum-crc64nvme", "AAAAAAAAAAA=")
		w.Write(body)
	})
	type outcome struct {
		n     int
		err   error
		cl    int64
		sumHd string
	}
	get := func(t *testing.T, c *http.Client, url string) outcome {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			return outcome{err: err}
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return outcome{n: len(data), err: err, cl: resp.ContentLength, sumHd: resp.Header.Get("x-amz-checksum-crc64nvme")}
	}
	check := func(t *testing.T, name string, o outcome) {
		t.Helper()
		switch name {
		case "reset":
			if o.err == nil || o.n > 1000 || !(errors.Is(o.err, syscall.ECONNRESET) || errors.Is(o.err, io.ErrUnexpectedEOF)) {
				t.Errorf("reset: read %d, err %v", o.n, o.err)
			}
		case "truncate":
			if !errors.Is(o.err, io.ErrUnexpectedEOF) || o.n != 1000 {
				t.Errorf("truncate: read %d, err %v", o.n, o.err)
			}
		case "shorten":
			if o.err != nil || o.n != 1000 || o.cl != 1000 {
				t.Errorf("shorten: read %d (content-length %d), err %v", o.n, o.cl, o.err)
			}
		case "header":
			if o.err != nil || o.n != len(body) || o.sumHd != "BBBBBBBBBBB=" {
				t.Errorf("header: %+v", o)
			}
		case "body":
			if o.err != nil || o.n != 3 {
				t.Errorf("body: %+v", o)
			}
		}
	}
	actions := map[string]Action{
		"reset": Reset(1000), "truncate": Truncate(1000), "shorten": Shorten(1000),
		"header": Header(func(h http.Header) { h.Set("x-amz-checksum-crc64nvme", "BBBBBBBBBBB=") }),
		"body":   Body(func([]byte) []byte { return []byte("abc") }),
	}
	for name, act := range actions {
		t.Run("client/"+name, func(t *testing.T) {
			srv := httptest.NewServer(origin)
			defer srv.Close()
			check(t, name, get(t, New(&Rule{Action: act}).Client(), srv.URL+"/b/k"))
		})
		t.Run("server/"+name, func(t *testing.T) {
			srv := httptest.NewServer(New(&Rule{Action: act}).Handler(origin))
			defer srv.Close()
			check(t, name, get(t, &http.Client{Transport: &http.Transport{}}, srv.URL+"/b/k"))
		})
		t.Run("proxy/"+name, func(t *testing.T) {
			srv := httptest.NewServer(origin)
			defer srv.Close()
			p, err := NewProxy(srv.URL, New(&Rule{Action: act}))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			check(t, name, get(t, &http.Client{Transport: &http.Transport{}}, p.URL+"/b/k"))
		})
	}
}

// The proxy keeps the Host header the client signed.
func TestProxyKeepsHost(t *testing.T) {
	var host string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { host = r.Host }))
	defer srv.Close()
	p, err := NewProxy(srv.URL, New())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	resp, err := http.Get(p.URL + "/b/k")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if host != strings.TrimPrefix(p.URL, "http://") {
		t.Errorf("origin saw Host %q, want the proxy's %q", host, p.URL)
	}
}

// SetLatency holds each leg back: with an hour on one leg, a request whose context ends first
// fails, and the server has (response leg) or has not (request leg) seen it. Both the client
// transport and the server handler add it; no wall-clock time is asserted.
func TestLatency(t *testing.T) {
	for _, leg := range []string{"request", "response"} {
		for _, side := range []string{"client", "server"} {
			t.Run(leg+"/"+side, func(t *testing.T) {
				in := New()
				if leg == "request" {
					in.SetLatency(time.Hour, 0)
				} else {
					in.SetLatency(0, time.Hour)
				}
				var reached atomic.Int32
				var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					reached.Add(1)
					io.WriteString(w, "ok")
				})
				client := http.DefaultClient
				if side == "server" {
					h = in.Handler(h)
				}
				srv := httptest.NewServer(h)
				defer srv.Close()
				if side == "client" {
					client = in.Client()
				}
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/b/k", nil)
				resp, err := client.Do(req)
				if err == nil {
					resp.Body.Close()
					t.Fatal("the request did not wait out its latency")
				}
				if want := int32(map[string]int{"request": 0, "response": 1}[leg]); reached.Load() != want && side == "client" {
					t.Fatalf("server reached %d times, want %d", reached.Load(), want)
				}
			})
		}
	}
	// Zero latency changes nothing.
	in := New()
	srv := httptest.NewServer(in.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })))
	defer srv.Close()
	resp, err := in.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("body %q", b)
	}
}
