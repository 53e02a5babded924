package verify_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/fsouza/fake-gcs-server/fakestorage"

	"lifeboat/internal/emulators"
	"lifeboat/manifest"
	"lifeboat/manifest/sample"
	"lifeboat/providers"
	"lifeboat/verify"
)

var fixtureRoot string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lifeboat-verify-")
	if err != nil {
		panic(err)
	}
	fixtureRoot = dir
	code := emulators.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// fixture is a generated sample bundle and its manifest.
type fixture struct {
	root string // holds model/, engine/, deploy/ = the manifest's paths
	m    *manifest.Manifest
}

func (f *fixture) path(bundlePath string) string {
	return filepath.Join(f.root, filepath.FromSlash(bundlePath))
}

func (f *fixture) data(t testing.TB, bundlePath string) []byte {
	t.Helper()
	b, err := os.ReadFile(f.path(bundlePath))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	fixtureMu sync.Mutex
	fixtures  = map[string]*fixture{}
)

// getFixture generates (once per binary) a sample bundle: "small" is the default tiny sample
// (shards of ~140 kB); "large" has two ~6 MiB shards, so that S3 uploads them in parts (full-object
// CRC64NVME, proven only by a Stat) and deep reads split them into ranges.
func getFixture(t testing.TB, name string) *fixture {
	t.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if f := fixtures[name]; f != nil {
		return f
	}
	o := sample.Options{}
	if name == "large" {
		o = sample.Options{TargetBytes: 12 << 20, Shards: 2}
	}
	root := filepath.Join(fixtureRoot, name)
	l, err := sample.Generate(context.Background(), root, o)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Build(context.Background(), manifest.BuildOptions{
		ModelDir: l.ModelDir, EngineFile: l.EngineFile, DeployPaths: []string{l.DeployDir}, Name: "verify-test",
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{root: root, m: m}
	for _, file := range m.Files {
		if _, err := os.Stat(f.path(file.Path)); err != nil {
			t.Fatalf("fixture layout: %v", err)
		}
	}
	fixtures[name] = f
	return f
}

// shards returns the fixture's safetensors shard paths.
func (f *fixture) shards() []string {
	var out []string
	for _, file := range f.m.Files {
		if file.Role == manifest.RoleWeights && strings.Contains(file.Path, "-of-") {
			out = append(out, file.Path)
		}
	}
	return out
}

// seed uploads the whole bundle to s through Store.Write with the manifest's checksums, so that
// every object carries the native checksum its provider keeps.
func seed(t testing.TB, s providers.Store, f *fixture) {
	t.Helper()
	for _, file := range f.m.Files {
		put(t, s, file.Path, f.data(t, file.Path), providers.Checksums(file.Sums))
	}
}

func put(t testing.TB, s providers.Store, key string, data []byte, sums providers.Checksums) {
	t.Helper()
	if _, err := s.Write(context.Background(), key, bytes.NewReader(data), providers.WriteOptions{Size: int64(len(data)), Checksums: sums}); err != nil {
		t.Fatalf("write %s: %v", key, err)
	}
}

func del(t testing.TB, s providers.Store, key string) {
	t.Helper()
	if err := s.Delete(context.Background(), key, providers.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
}

// testOptions shrink the SDK retries: quick, bounded, still retrying.
func storeOptions() providers.Options {
	return providers.Options{
		PartSize: 5 << 20, Concurrency: 4, PageSize: 100,
		Retry: providers.RetryOptions{MaxAttempts: 3, InitialBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond},
	}
}

// verifyOptions make ranged deep reads happen on the test fixtures and retries quick.
func verifyOptions() verify.Options {
	return verify.Options{Jobs: 8, RangeSize: 1 << 20, ReadAttempts: 3, RetryBackoff: time.Millisecond, StallTimeout: 2 * time.Second}
}

// backend is one provider under test: it opens stores over fresh prefixes, optionally through
// an *http.Client (fault injection).
type backend struct {
	name string
	// open returns a store at prefix; hc (may be nil) carries every request.
	open func(t testing.TB, prefix string, hc *http.Client) providers.Store
	// native says whether the provider keeps checksums quick verification can compare.
	native bool
	// raw gives direct access for planting objects the Store would never write.
	s3  *emulators.S3
	az  *emulators.Azurite
	gcs *emulators.GCS
}

var prefixSeq atomic.Int64

func freshPrefix(name string) string { return fmt.Sprintf("%s-%04d", name, prefixSeq.Add(1)) }

const bucket = "lifeboat-verify"

func fileBackend(t testing.TB) *backend {
	root := t.TempDir()
	return &backend{name: "file", open: func(t testing.TB, prefix string, _ *http.Client) providers.Store {
		dir := filepath.Join(root, prefix)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return openStore(t, "file://"+dir, storeOptions())
	}}
}

func openStore(t testing.TB, rawURL string, o providers.Options) providers.Store {
	t.Helper()
	s, err := providers.Open(context.Background(), rawURL, o)
	if err != nil {
		t.Fatalf("open %s: %v", rawURL, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func rawS3(gw *emulators.S3) *s3.Client {
	return s3.New(s3.Options{
		Region: gw.Region, BaseEndpoint: aws.String(gw.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(gw.AccessKey, gw.SecretKey, ""),
	})
}

func s3URL(gw *emulators.S3, endpoint, bucket, prefix string) string {
	if endpoint == "" {
		endpoint = gw.Endpoint
	}
	return fmt.Sprintf("s3://%s/%s?region=%s&endpoint=%s", bucket, prefix, gw.Region, url.QueryEscape(endpoint))
}

var s3BucketOnce sync.Once

func s3Backend(t testing.TB) *backend {
	gw := emulators.SharedVersityGW(t)
	s3BucketOnce.Do(func() {
		_, err := rawS3(gw).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		if err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") {
			t.Fatalf("create bucket: %v", err)
		}
	})
	return &backend{name: "s3", native: true, s3: gw, open: func(t testing.TB, prefix string, hc *http.Client) providers.Store {
		o := storeOptions()
		o.S3Credentials = credentials.NewStaticCredentialsProvider(gw.AccessKey, gw.SecretKey, "")
		o.HTTPClient = hc
		return openStore(t, s3URL(gw, "", bucket, prefix), o)
	}}
}

func gcsBackend(t testing.TB) *backend {
	g := emulators.SharedFakeGCS(t)
	g.Server.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	return &backend{name: "gcs", native: true, gcs: g, open: func(t testing.TB, prefix string, hc *http.Client) providers.Store {
		o := storeOptions()
		o.HTTPClient = hc
		return openStore(t, "gs://"+bucket+"/"+prefix, o)
	}}
}

var azContainerOnce sync.Once

func azureBackend(t testing.TB) *backend {
	a := emulators.SharedAzurite(t)
	azContainerOnce.Do(func() {
		c, err := azblob.NewClientFromConnectionString(a.ConnectionString(a.Key), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateContainer(context.Background(), bucket, nil); err != nil && !strings.Contains(err.Error(), "ContainerAlreadyExists") {
			t.Fatalf("create container: %v", err)
		}
	})
	return &backend{name: "azure", native: true, az: a, open: func(t testing.TB, prefix string, hc *http.Client) providers.Store {
		o := storeOptions()
		o.AzureConnectionString = a.ConnectionString(a.Key)
		o.HTTPClient = hc
		return openStore(t, "az://"+emulators.AzuriteAccount+"/"+bucket+"/"+prefix, o)
	}}
}

// backends returns every provider under test.
func backends(t *testing.T) []*backend {
	return []*backend{fileBackend(t), s3Backend(t), gcsBackend(t), azureBackend(t)}
}

// byPath indexes a replica's file results.
func byPath(r verify.ReplicaResult) map[string]verify.FileResult {
	out := map[string]verify.FileResult{}
	for _, f := range r.Files {
		out[f.Path] = f
	}
	return out
}

// dump renders a replica result for failure messages.
func dump(r verify.ReplicaResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %v err=%q\n", r.URL, r.Status, r.Counts, r.Error)
	for _, f := range r.Files {
		fmt.Fprintf(&b, "  %-17s %s: %s\n", f.Status, f.Path, f.Detail)
	}
	return b.String()
}

// expectStatuses checks the status of each file named in want; every other manifest file must
// have status other, if given.
func expectStatuses(t *testing.T, r verify.ReplicaResult, want map[string][]verify.Status, other ...verify.Status) {
	t.Helper()
	got := byPath(r)
	for p, ws := range want {
		f, ok := got[p]
		if !ok {
			t.Errorf("%s: no result for %s\n%s", r.URL, p, dump(r))
			continue
		}
		okStatus := false
		for _, w := range ws {
			okStatus = okStatus || f.Status == w
		}
		if !okStatus {
			t.Errorf("%s: %s is %s (%s), want one of %v", r.URL, p, f.Status, f.Detail, ws)
		}
	}
	if len(other) == 0 {
		return
	}
	for _, f := range r.Files {
		if _, named := want[f.Path]; named {
			continue
		}
		okStatus := false
		for _, w := range other {
			okStatus = okStatus || f.Status == w
		}
		if !okStatus {
			t.Errorf("%s: %s is %s (%s), want one of %v", r.URL, f.Path, f.Status, f.Detail, other)
		}
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
