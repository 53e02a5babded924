package faultproxy

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
)

// Proxy is a reverse proxy on a loopback port that applies an Injector's rules in front of a
// server (an out-of-process emulator).
type Proxy struct {
	URL    string // http://127.0.0.1:PORT
	server *http.Server
}

// NewProxy starts a proxy to target (http://HOST:PORT[/…]). The Host header the client sent is
// kept, so signatures over it (S3 SigV4) stay valid; Azure's shared key does not sign the host and
// GCS emulators check nothing.
func NewProxy(target string, in *Injector) (*Proxy, error) {
	tu, err := url.Parse(target)
	if err != nil || tu.Host == "" {
		return nil, fmt.Errorf("faultproxy: bad target %q", target)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(tu)
			pr.Out.Host = pr.In.Host
		},
		Transport:     http.DefaultTransport.(*http.Transport).Clone(),
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0), // clients that hang up mid-fault are expected
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{URL: "http://" + l.Addr().String(), server: &http.Server{Handler: in.Handler(rp)}}
	go func() { _ = p.server.Serve(l) }()
	return p, nil
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() { _ = p.server.Close() }
