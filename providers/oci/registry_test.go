package oci_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/providers"
	"lifeboat/providers/oci"
	"lifeboat/providers/providertest"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestMain(m *testing.M) {
	// No test may reach for cloud metadata servers.
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	os.Exit(emulators.Main(m))
}

var (
	testOptions = providertest.Options
	open        = providertest.Open
	prefixSeq   atomic.Int64
)

// countingTransport counts requests by method.
type countingTransport struct {
	posts, puts, gets, heads atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost:
		c.posts.Add(1)
	case http.MethodPut:
		c.puts.Add(1)
	case http.MethodGet:
		c.gets.Add(1)
	case http.MethodHead:
		c.heads.Add(1)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// The registry store against a real distribution registry with basic auth, credentials from a
// Docker config.json: blobs written by digest, the manifest pushed, keys resolved through it
// after reopening, HEAD-based Stat with the SHA-256, ranged reads, no second upload of a blob
// already there, and the lacking capabilities reported.
func TestRegistryStore(t *testing.T) {
	reg := emulators.SharedRegistry(t)
	t.Setenv("DOCKER_CONFIG", emulators.DockerConfig(t, reg))
	ctx := t.Context()
	url := reg.Location("suite/store") + ":v1"
	ct := &countingTransport{}
	opts := testOptions()
	opts.HTTPClient = &http.Client{Transport: ct}

	files := map[string][]byte{
		"model/config.json":       []byte(`{"arch":"llama"}`),
		"model/model.safetensors": bytes.Repeat([]byte("weights!"), 40000),
	}
	var layers []ocispec.Descriptor
	s := open(t, url, opts)
	if c := s.Capabilities(); len(c.Lacks) != 2 || c.WriteChecksums[0] != providers.SHA256 {
		t.Fatalf("capabilities %+v", c)
	}
	for _, p := range []string{"model/config.json", "model/model.safetensors"} {
		sum := sha256.Sum256(files[p])
		o, err := s.Write(ctx, p, bytes.NewReader(files[p]), providers.WriteOptions{Size: int64(len(files[p])), Checksums: providers.Checksums{SHA256: hex.EncodeToString(sum[:])}})
		if err != nil {
			t.Fatalf("write %s: %v", p, err)
		}
		if o.Size != int64(len(files[p])) {
			t.Fatalf("write %s: %+v", p, o)
		}
		layers = append(layers, ocispec.Descriptor{MediaType: "application/vnd.cncf.model.weight.v1.raw", Digest: digest.FromBytes(files[p]), Size: int64(len(files[p])),
			Annotations: map[string]string{oci.AnnotationFilepath: p}})
	}
	// No digest declared: computed on the way, the blob committed by it.
	if o, err := s.Write(ctx, "model/x", bytes.NewReader([]byte("xyz")), providers.WriteOptions{}); err != nil || o.Revision != digest.FromBytes([]byte("xyz")).String() {
		t.Fatalf("write without a digest: %+v %v", o, err)
	}
	if _, err := s.Write(ctx, "model/y", bytes.NewReader([]byte("abc")), providers.WriteOptions{Size: 3, IfNotExists: true, Checksums: providers.Checksums{SHA256: hex.EncodeToString(make([]byte, 32))}}); !errors.Is(err, providers.ErrUnsupported) {
		t.Fatalf("conditional write: %v", err)
	}
	// Wrong content for a digest: the registry refuses it, nothing is stored.
	bad := sha256.Sum256([]byte("other"))
	if _, err := s.Write(ctx, "model/z", bytes.NewReader([]byte("not other")), providers.WriteOptions{Size: 9, Checksums: providers.Checksums{SHA256: hex.EncodeToString(bad[:])}}); err == nil {
		t.Fatal("write of content that does not match its digest succeeded")
	}
	cfg := []byte(`{"descriptor":{"name":"t"},"config":{},"modelfs":{"type":"layers","diff_ids":[]}}`)
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: ocispec.Descriptor{MediaType: "application/vnd.cncf.model.config.v1+json", Digest: digest.FromBytes(cfg), Size: int64(len(cfg)), Data: cfg},
		Layers: layers}
	data, _ := json.Marshal(m)
	dg, err := oci.PushManifest(ctx, s, data)
	if err != nil || dg != digest.FromBytes(data) {
		t.Fatalf("push manifest: %v %v", dg, err)
	}

	posts := ct.posts.Load()
	s2 := open(t, url, opts)
	if got, err := oci.FetchManifest(ctx, s2); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetch manifest: %v", err)
	}
	for p, want := range files {
		o, err := s2.Stat(ctx, p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		sum := sha256.Sum256(want)
		if c, ok := o.Checksum(providers.SHA256); !ok || c.Value != hex.EncodeToString(sum[:]) || o.Size != int64(len(want)) {
			t.Fatalf("stat %s: %+v", p, o)
		}
		var got []byte
		if err := s2.Read(ctx, p, providers.ReadOptions{Offset: 3, Length: 10}, func(r io.Reader) error {
			b, err := io.ReadAll(r)
			got = b
			return err
		}); err != nil || !bytes.Equal(got, want[3:13]) {
			t.Fatalf("ranged read %s: %q %v", p, got, err)
		}
		// A second write of a blob already there moves nothing.
		if _, err := s2.Write(ctx, p, bytes.NewReader(want), providers.WriteOptions{Size: int64(len(want)), Checksums: providers.Checksums{SHA256: hex.EncodeToString(sum[:])}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := ct.posts.Load() - posts; n != 0 {
		t.Fatalf("%d uploads started for blobs already in the registry", n)
	}
	// Another repository of the same registry gets the blobs by a cross-repository mount: no
	// upload body (PUT) at all, and the blob is there afterwards.
	other := open(t, reg.Location("suite/mounted")+":v1", opts)
	puts := ct.puts.Load()
	for p, want := range files {
		sum := sha256.Sum256(want)
		ok, err := providers.Mount(ctx, other, s2, p, providers.WriteOptions{Size: int64(len(want)), Checksums: providers.Checksums{SHA256: hex.EncodeToString(sum[:])}})
		if err != nil || !ok {
			t.Fatalf("mount %s: %v %v", p, ok, err)
		}
		if o, err := other.Stat(ctx, p); err != nil || o.Size != int64(len(want)) {
			t.Fatalf("stat of mounted %s: %+v %v", p, o, err)
		}
	}
	if n := ct.puts.Load() - puts; n != 0 {
		t.Fatalf("%d uploads for mounted blobs", n)
	}
	if ok, err := providers.Mount(ctx, other, open(t, "file://"+t.TempDir(), opts), "model/config.json", providers.WriteOptions{}); ok || err != nil {
		t.Fatalf("mount from a directory: %v %v", ok, err)
	}
	if _, err := s2.Stat(ctx, "model/missing"); !errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("stat of a file the manifest does not name: %v", err)
	}
	if _, err := open(t, reg.Location("suite/nothing")+":v1", opts).Stat(ctx, "model/config.json"); !errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("stat in a repository with no manifest: %v", err)
	}
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	if _, err := open(t, url, opts).Stat(ctx, "model/config.json"); !errors.Is(err, providers.ErrPermission) {
		t.Fatalf("stat without credentials: %v", err)
	} else if bytes.Contains([]byte(err.Error()), []byte(reg.Password)) {
		t.Fatal("credential in an error")
	}
}

// A listing entry is Confirmed only when this store committed the blob (or found it with a
// HEAD) since it was opened: a push's check of what it just wrote needs no HEADs, and a store
// opened afterwards lists from the manifest alone, never Confirmed.
func TestRegistryListConfirmsOnlyWhatItWrote(t *testing.T) {
	reg := emulators.SharedRegistry(t)
	t.Setenv("DOCKER_CONFIG", emulators.DockerConfig(t, reg))
	ctx := t.Context()
	url := reg.Location("suite/confirmed") + ":v1"
	ct := &countingTransport{}
	opts := testOptions()
	opts.HTTPClient = &http.Client{Transport: ct}
	s := open(t, url, opts)
	data := []byte(`{"arch":"llama"}`)
	sum := sha256.Sum256(data)
	if _, err := s.Write(ctx, "model/config.json", bytes.NewReader(data), providers.WriteOptions{Size: int64(len(data)), Checksums: providers.Checksums{SHA256: hex.EncodeToString(sum[:])}}); err != nil {
		t.Fatal(err)
	}
	confirmed := func(st providers.Store) map[string]bool {
		out := map[string]bool{}
		if err := st.List(ctx, "", func(o providers.Object) error { out[o.Key] = o.Confirmed; return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	heads := ct.heads.Load()
	if got := confirmed(s); !got["model/config.json"] {
		t.Fatalf("the blob this store committed is not Confirmed: %v", got)
	}
	if n := ct.heads.Load() - heads; n != 0 {
		t.Fatalf("%d HEADs to list", n)
	}
	cfg := []byte(`{"descriptor":{"name":"t"},"config":{},"modelfs":{"type":"layers","diff_ids":[]}}`)
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: ocispec.Descriptor{MediaType: "application/vnd.cncf.model.config.v1+json", Digest: digest.FromBytes(cfg), Size: int64(len(cfg)), Data: cfg},
		Layers: []ocispec.Descriptor{{MediaType: "application/vnd.cncf.model.weight.v1.raw", Digest: digest.FromBytes(data), Size: int64(len(data)),
			Annotations: map[string]string{oci.AnnotationFilepath: "model/config.json"}}}}
	man, _ := json.Marshal(m)
	if _, err := oci.PushManifest(ctx, s, man); err != nil {
		t.Fatal(err)
	}
	if got := confirmed(open(t, url, opts)); len(got) != 1 || got["model/config.json"] {
		t.Fatalf("a store opened afterwards: %v, want model/config.json listed from the manifest, not Confirmed", got)
	}
}

// The conformance suite every store passes, against a real registry: what a registry lacks
// (compare-and-swap, listing by prefix) it reports, and the suite skips exactly those cases,
// with the store's reason; the rest — writes with no digest given (computed on the way),
// chunked uploads, declared checksums checked before anything commits, ranged reads, denied
// credentials — hold as for a bucket.
func TestRegistryConformance(t *testing.T) {
	t.Parallel()
	reg := emulators.SharedRegistry(t)
	good := emulators.DockerConfig(t, reg)
	wrong := *reg
	wrong.Password = "not-the-password"
	denied := emulators.DockerConfig(t, &wrong)
	opts := func(cfg string) providers.Options {
		o := testOptions()
		o.DockerConfig = cfg
		return o
	}
	newStore := func(t *testing.T) providers.Store {
		return open(t, reg.Location(fmt.Sprintf("suite/conformance-%05d", prefixSeq.Add(1)))+":v1", opts(good))
	}
	providertest.Run(t, newStore, providertest.WithDenied(func(t *testing.T) providers.Store {
		return open(t, reg.Location("suite/denied")+":v1", opts(denied))
	}))
}

// cuttingProxy is a reverse proxy in front of the registry that counts the PATCH bytes it
// forwards, by Content-Range start, and cuts the connection of one chosen PATCH half-way
// through its body without forwarding any of it — the registry holds the chunks before it.
type cuttingProxy struct {
	cutAt     int // the PATCH (from 1) to cut
	patches   atomic.Int64
	forwarded atomic.Int64 // PATCH body bytes that reached the registry
	statuses  atomic.Int64 // GETs of the upload URL
	mu        sync.Mutex
	starts    map[string]int // Content-Range → times forwarded
}

func (p *cuttingProxy) handler(rp http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/uploads/") {
			p.statuses.Add(1)
		}
		if r.Method != http.MethodPatch {
			rp.ServeHTTP(w, r)
			return
		}
		if int(p.patches.Add(1)) == p.cutAt {
			io.CopyN(io.Discard, r.Body, r.ContentLength/2)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		p.mu.Lock()
		p.starts[r.Header.Get("Content-Range")]++
		p.mu.Unlock()
		r.Body = countBody{r.Body, &p.forwarded}
		rp.ServeHTTP(w, r)
	})
}

type countBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countBody) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// A streamed upload (one PATCH for the whole blob) cut off half-way through its body asks the
// registry how much it holds (GET on the upload URL) and resumes from there with one more PATCH
// from the bytes still in memory (the blob is smaller than the upload's window): every byte
// reaches the registry exactly once, and the blob is whole.
func TestRegistryChunkedUploadResumes(t *testing.T) {
	t.Parallel()
	reg := emulators.SharedRegistry(t)
	up, _ := url.Parse("http://" + reg.Host)
	cp := &cuttingProxy{cutAt: 1, starts: map[string]int{}}
	srv := httptest.NewServer(cp.handler(httputil.NewSingleHostReverseProxy(up)))
	defer srv.Close()
	via := *reg
	via.Host = strings.TrimPrefix(srv.URL, "http://")
	o := testOptions()
	o.PartSize = 1 << 20
	o.DockerConfig = emulators.DockerConfig(t, &via)
	s := open(t, via.Location("suite/resume")+":v1", o)

	const size = 5<<20 + 4321
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	sum := sha256.Sum256(data)
	// No SHA-256 declared: the store computes it on the way and commits by it.
	w, err := s.Write(t.Context(), "model/model.safetensors", bytes.NewReader(data), providers.WriteOptions{Size: size})
	if err != nil {
		t.Fatalf("write through a cut: %v", err)
	}
	if w.Revision != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("revision %s", w.Revision)
	}
	if n := cp.forwarded.Load(); n != size {
		t.Fatalf("%d bytes reached the registry for a %d-byte blob", n, size)
	}
	for cr, n := range cp.starts {
		if n != 1 {
			t.Fatalf("bytes %s sent %d times", cr, n)
		}
	}
	if cp.statuses.Load() != 1 {
		t.Fatalf("%d upload status requests, want the one after the cut", cp.statuses.Load())
	}
	if cp.patches.Load() != 2 { // the one cut, and the one that resumed
		t.Fatalf("%d PATCHes", cp.patches.Load())
	}
	if cp.starts[fmt.Sprintf("0-%d", size-1)] != 1 {
		t.Fatalf("the resumed PATCH did not carry the whole blob: %v", cp.starts)
	}
	var got []byte
	if err := s.Read(t.Context(), "model/model.safetensors", providers.ReadOptions{}, func(r io.Reader) error {
		got, err = io.ReadAll(r)
		return err
	}); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %v", err)
	}
}

// A blob larger than one chunk whose SHA-256 is declared is streamed in the closing PUT itself
// (no PATCH); a source whose bytes do not have the declared SHA-256 is reported as a content
// mismatch, and the registry commits nothing.
func TestRegistryStreamedPutDeclaredDigest(t *testing.T) {
	t.Parallel()
	reg := emulators.SharedRegistry(t)
	up, _ := url.Parse("http://" + reg.Host)
	cp := &cuttingProxy{starts: map[string]int{}}
	srv := httptest.NewServer(cp.handler(httputil.NewSingleHostReverseProxy(up)))
	defer srv.Close()
	via := *reg
	via.Host = strings.TrimPrefix(srv.URL, "http://")
	o := testOptions()
	o.PartSize = 1 << 20
	o.DockerConfig = emulators.DockerConfig(t, &via)
	s := open(t, via.Location("suite/streamput")+":v1", o)

	const size = 3<<20 + 17
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*13 + i>>9)
	}
	sum := sha256.Sum256(data)
	hexsum := hex.EncodeToString(sum[:])

	bad := bytes.Clone(data)
	bad[size-5] ^= 1
	_, err := s.Write(t.Context(), "model/bad.safetensors", bytes.NewReader(bad), providers.WriteOptions{Size: size, Checksums: providers.Checksums{SHA256: hexsum}})
	if !errors.Is(err, providers.ErrContentMismatch) {
		t.Fatalf("write of a corrupt source: %v, want a content mismatch", err)
	}

	w, err := s.Write(t.Context(), "model/model.safetensors", bytes.NewReader(data), providers.WriteOptions{Size: size, Checksums: providers.Checksums{SHA256: hexsum}})
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	if w.Revision != "sha256:"+hexsum {
		t.Fatalf("revision %s", w.Revision)
	}
	if n := cp.patches.Load(); n != 0 {
		t.Fatalf("%d PATCHes, want the bytes in the closing PUT", n)
	}
	var got []byte
	if err := s.Read(t.Context(), "model/model.safetensors", providers.ReadOptions{}, func(r io.Reader) error {
		got, err = io.ReadAll(r)
		return err
	}); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %v", err)
	}
}
