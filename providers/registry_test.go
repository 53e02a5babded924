package providers_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/providers"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// countingTransport counts requests by method.
type countingTransport struct {
	posts, puts, gets atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost:
		c.posts.Add(1)
	case http.MethodPut:
		c.puts.Add(1)
	case http.MethodGet:
		c.gets.Add(1)
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
			Annotations: map[string]string{providers.AnnotationFilepath: p}})
	}
	if _, err := s.Write(ctx, "model/x", bytes.NewReader(nil), providers.WriteOptions{}); !errors.Is(err, providers.ErrUnsupported) {
		t.Fatalf("write without a digest: %v", err)
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
	dg, err := providers.PushManifest(ctx, s, data)
	if err != nil || dg != digest.FromBytes(data) {
		t.Fatalf("push manifest: %v %v", dg, err)
	}

	posts := ct.posts.Load()
	s2 := open(t, url, opts)
	if got, err := providers.FetchManifest(ctx, s2); err != nil || !bytes.Equal(got, data) {
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
