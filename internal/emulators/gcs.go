package emulators

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// DeniedGCSBucket is a bucket name the GCS emulator answers with 403, the way GCS answers a
// caller whose credentials lack access (fake-gcs-server checks no credentials itself).
const DeniedGCSBucket = "lifeboat-denied"

// GCS is fake-gcs-server running in-process on a loopback port.
type GCS struct {
	Host   string // 127.0.0.1:PORT, the value for STORAGE_EMULATOR_HOST
	Server *fakestorage.Server
	http   *http.Server
}

// StartFakeGCS starts fake-gcs-server (in memory) behind an HTTP server on a free loopback port.
// wrap, if not nil, wraps its handler (fault injection).
func StartFakeGCS(wrap func(http.Handler) http.Handler) (*GCS, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	host := l.Addr().String()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme: "http", NoListener: true, ExternalURL: "http://" + host, PublicHost: host,
	})
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("fake-gcs-server: %w", err)
	}
	h := denyBucket(srv.HTTPHandler())
	if wrap != nil {
		h = wrap(h)
	}
	hs := &http.Server{Handler: h}
	go func() { _ = hs.Serve(l) }()
	return &GCS{Host: host, Server: srv, http: hs}, nil
}

// Stop stops the server.
func (g *GCS) Stop() {
	_ = g.http.Close()
	g.Server.Stop()
}

func denyBucket(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if strings.Contains(p, "/b/"+DeniedGCSBucket+"/") || strings.HasSuffix(p, "/b/"+DeniedGCSBucket) ||
			strings.HasPrefix(p, "/"+DeniedGCSBucket+"/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"error":{"code":403,"message":"caller does not have storage.objects.get access to the Google Cloud Storage object.","errors":[{"message":"caller does not have access","domain":"global","reason":"forbidden"}]}}`)
			return
		}
		next.ServeHTTP(w, r)
	})
}
