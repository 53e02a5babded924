package httpdoc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go.yaml.in/yaml/v3"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/yamlnode"
)

// Router drives a custom router that serves one JSON document per tenant class at
// URL/BACKEND (router.url, router.backends):
//
//	{"weights": {"eu-west-1": 50, "eu-central-1": 50}, "states": {"eu-west-1": "drain"}}
//
// GET returns it with an ETag; PUT replaces it and must carry If-Match with that ETag (the
// router answers 412 when the document changed in between: compare-and-swap). A region absent
// from weights receives nothing (maint); an absent state is ready.
type Router struct {
	URL      string
	Backends map[string]string
	Classes  map[string][]string
	Timeout  time.Duration
	Client   *http.Client
	Attempts int // read-modify-write attempts of the unconditional Apply on 412; 0 means 3
	// AllowNoETag (router.allow_no_etag): a router that sends no ETag is written after comparing
	// the document with this run's last read-back immediately before the PUT, instead of refused.
	AllowNoETag bool
}

// Doc is the per-class document.
type Doc struct {
	Weights map[string]int          `json:"weights"`
	States  map[string]router.State `json:"states,omitempty"`
}

func (h *Router) String() string { return "http:" + h.URL }

// MaxWeight: the document takes any int; 1,000,000 keeps readers' arithmetic safe.
func (h *Router) MaxWeight() int { return 1_000_000 }

func (h *Router) do(ctx context.Context, method, class, etag string, body []byte) (int, string, []byte, error) {
	to := h.Timeout
	if to <= 0 {
		to = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	b, ok := h.Backends[class]
	if !ok {
		b = class
	}
	u := h.URL + "/" + url.PathEscape(b)
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if etag != "" {
		req.Header.Set("If-Match", etag)
	}
	resp, err := router.Client(h.Client).Do(req)
	if err != nil {
		return 0, "", nil, fmt.Errorf("router %s %s: %v: %w", method, u, err, router.ErrRouterUnreachable)
	}
	defer resp.Body.Close()
	rb, err := router.Answer("router "+method+" "+u, resp)
	if err != nil {
		return resp.StatusCode, "", nil, err
	}
	return resp.StatusCode, resp.Header.Get("ETag"), rb, nil
}

func (h *Router) get(ctx context.Context, class string) (Doc, string, error) {
	code, etag, b, err := h.do(ctx, http.MethodGet, class, "", nil)
	if err != nil {
		return Doc{}, "", err
	}
	if code != http.StatusOK {
		return Doc{}, "", router.Status(fmt.Sprintf("router GET %s/%s", h.URL, h.Backends[class]), code, b)
	}
	if etag == "" {
		if !h.AllowNoETag {
			return Doc{}, "", fmt.Errorf("router GET %s/%s: no ETag: compare-and-swap is impossible (router.allow_no_etag: true accepts a compare before each write instead)", h.URL, h.Backends[class])
		}
		etag = router.DigestOf(b)
	}
	var doc Doc
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return doc, "", fmt.Errorf("router GET %s/%s: %v", h.URL, h.Backends[class], err)
	}
	for r, v := range doc.Weights {
		if v < 0 {
			return doc, "", fmt.Errorf("router GET %s/%s: weights.%s: negative", h.URL, h.Backends[class], r)
		}
	}
	for r, s := range doc.States {
		switch s {
		case router.Ready, router.Drain, router.Maint:
		default:
			return doc, "", fmt.Errorf("router GET %s/%s: states.%s: %q", h.URL, h.Backends[class], r, s)
		}
	}
	return doc, etag, nil
}

// Read returns every class's document.
func (h *Router) Read(ctx context.Context) (router.RouterState, error) {
	rs, _, err := h.ReadVersion(ctx)
	return rs, err
}

// ReadVersion returns every class's document with its ETag.
func (h *Router) ReadVersion(ctx context.Context) (router.RouterState, router.RouterVersion, error) {
	rs := router.RouterState{Weights: router.Weights{}, States: router.States{}}
	v := router.RouterVersion{}
	for _, class := range slices.Sorted(maps.Keys(h.Classes)) {
		doc, etag, err := h.get(ctx, class)
		if err != nil {
			return rs, nil, err
		}
		v[class] = etag
		rs.Weights[class] = map[string]int{}
		for r, v := range doc.Weights {
			rs.Weights[class][r] = v
		}
		for r, s := range doc.States {
			if s != router.Ready {
				rs.States.Set(class, r, s)
			}
		}
		for _, r := range h.Classes[class] {
			if _, ok := doc.Weights[r]; !ok {
				rs.Weights[class][r] = 0
				rs.States.Set(class, r, router.Maint)
			}
		}
	}
	return rs, v, nil
}

// ApplyIf replaces each class's document with If-Match on the ETag this run last saw (since);
// 412 is ErrRouterConflict, never retried. Without ETags (AllowNoETag) the document is compared
// with since immediately before an unconditional PUT.
func (h *Router) ApplyIf(ctx context.Context, desired router.RouterState, since router.RouterVersion, fence func() error) error {
	for _, class := range slices.Sorted(maps.Keys(desired.Weights)) {
		want, ok := since[class]
		if !ok {
			return router.SameVersion(h.String(), class, since, "")
		}
		ifMatch := want
		if strings.HasPrefix(want, "digest:") {
			_, now, err := h.get(ctx, class)
			if err != nil {
				return err
			}
			if err := router.SameVersion(h.String(), class, since, now); err != nil {
				return err
			}
			ifMatch = ""
		}
		if err := fence(); err != nil {
			return err
		}
		code, _, b, err := h.do(ctx, http.MethodPut, class, ifMatch, h.docBody(class, desired))
		if err != nil {
			return err
		}
		switch code {
		case http.StatusOK, http.StatusNoContent:
		case http.StatusPreconditionFailed:
			return fmt.Errorf("router PUT %s/%s: If-Match %s answered 412: the document changed since this run last wrote or read it back (someone else edited the router); nothing overwritten: %w", h.URL, h.Backends[class], want, router.ErrRouterConflict)
		default:
			return router.Status(fmt.Sprintf("router PUT %s/%s", h.URL, h.Backends[class]), code, b)
		}
	}
	return nil
}

// docBody is class's document in desired.
func (h *Router) docBody(class string, desired router.RouterState) []byte {
	doc := Doc{Weights: map[string]int{}, States: map[string]router.State{}}
	for r, v := range desired.Weights[class] {
		st := desired.States.Get(class, r)
		if st == router.Maint && v == 0 {
			continue // cut off: not in the document at all
		}
		doc.Weights[r] = v
		if st != router.Ready {
			doc.States[r] = st
		}
	}
	body, _ := json.Marshal(doc)
	return body
}

// Apply replaces each class's document with If-Match on the ETag just read (unconditional on
// what any run saw: the executor uses ApplyIf).
func (h *Router) Apply(ctx context.Context, desired router.RouterState) error {
	attempts := h.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	for _, class := range slices.Sorted(maps.Keys(desired.Weights)) {
		body := h.docBody(class, desired)
		var last error
		done := false
		for range attempts {
			_, etag, err := h.get(ctx, class)
			if err != nil {
				return err
			}
			code, _, b, err := h.do(ctx, http.MethodPut, class, etag, body)
			if err != nil {
				return err
			}
			if code == http.StatusOK || code == http.StatusNoContent {
				done = true
				break
			}
			if code == http.StatusPreconditionFailed {
				last = fmt.Errorf("router PUT %s/%s: %w", h.URL, h.Backends[class], router.ErrRouterConflict)
				continue
			}
			return router.Status(fmt.Sprintf("router PUT %s/%s", h.URL, h.Backends[class]), code, b)
		}
		if !done {
			return last
		}
	}
	return nil
}

// Register the kind; cmd/lifeboat/kinds.go links it in.
func init() {
	fleet.RegisterDriver(fleet.DriverKind{Name: fleet.DriverHTTP, Order: 4, Config: func() fleet.DriverConfig { return &Config{} }})
}

// The configuration's interface and the driver's capabilities, checked at compile time.
var (
	_ fleet.DriverConfig       = (*Config)(nil)
	_ router.ConditionalDriver = (*Router)(nil)
)

// HTTPConfig is the http driver's: router: {driver: http, url: https://router.internal/weights}.
type Config struct {
	URL         string `json:"url"` // the base URL of the per-class documents
	AllowNoETag bool   `json:"allow_no_etag,omitempty"`
}

func (c *Config) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{
		"url":           func(n *yaml.Node, at string) { c.URL = d.HTTPURL(n, at) },
		"allow_no_etag": func(n *yaml.Node, at string) { c.AllowNoETag = d.Bool(n, at) },
	}
}

func (c *Config) Check(d *fleet.Decoder, f *fleet.Fleet) {
	d.RequireRouter(f, c.URL != "", "url", "the base URL of the per-class weight documents")
}

func (c *Config) Open(f *fleet.Fleet) (router.Driver, error) {
	return &Router{URL: c.URL, Backends: f.Router.Backends, Classes: f.Tenants, Timeout: f.Router.Timeout, AllowNoETag: c.AllowNoETag}, nil
}
func (c *Config) Identity() []string { return []string{"", c.URL, ""} }
