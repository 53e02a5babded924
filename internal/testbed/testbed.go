package testbed

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"lifeboat/internal/clitest"
	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/verify"
)

// Bucket is the bucket (S3, GCS) or container (Azure) every backend's prefixes live in.
const Bucket = "lifeboat-verify"

// Main runs a package's tests, then stops the shared emulators and removes the fixtures and
// the built lifeboat binary: func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) }.
func Main(m *testing.M) int {
	code := emulators.Main(m)
	clitest.RemoveBinary()
	fixtures.mu.Lock()
	if fixtures.root != "" {
		os.RemoveAll(fixtures.root)
	}
	fixtures.mu.Unlock()
	return code
}

// Fixture is a generated sample bundle and its manifest.
type Fixture struct {
	Root string // holds model/, engine/, deploy/ = the manifest's paths
	M    *manifest.Manifest
}

// Path is the local path of a bundle path.
func (f *Fixture) Path(bundlePath string) string {
	return filepath.Join(f.Root, filepath.FromSlash(bundlePath))
}

// Data reads a bundle file.
func (f *Fixture) Data(t testing.TB, bundlePath string) []byte {
	t.Helper()
	b, err := os.ReadFile(f.Path(bundlePath))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Shards returns the fixture's safetensors shard paths.
func (f *Fixture) Shards() []string {
	var out []string
	for _, file := range f.M.Files {
		if file.Role == manifest.RoleWeights && strings.Contains(file.Path, "-of-") {
			out = append(out, file.Path)
		}
	}
	return out
}

var fixtures struct {
	mu     sync.Mutex
	root   string
	byName map[string]*Fixture
}

// Sample generates (once per test binary) a sample bundle: "small" is the default tiny sample
// (shards of ~140 kB); "large" has two ~6 MiB shards, so that S3 uploads them in parts (full-object
// CRC64NVME, proven only by a Stat) and deep reads split them into ranges. Tests must not change
// its files: copy them first.
func Sample(t testing.TB, name string) *Fixture {
	t.Helper()
	fixtures.mu.Lock()
	defer fixtures.mu.Unlock()
	if f := fixtures.byName[name]; f != nil {
		return f
	}
	if fixtures.root == "" {
		dir, err := os.MkdirTemp("", "lifeboat-fixtures-")
		if err != nil {
			t.Fatal(err)
		}
		fixtures.root, fixtures.byName = dir, map[string]*Fixture{}
	}
	o := sample.Options{}
	if name == "large" {
		o = sample.Options{TargetBytes: 12 << 20, Shards: 2}
	}
	root := filepath.Join(fixtures.root, name)
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
	f := &Fixture{Root: root, M: m}
	for _, file := range m.Files {
		if _, err := os.Stat(f.Path(file.Path)); err != nil {
			t.Fatalf("fixture layout: %v", err)
		}
	}
	fixtures.byName[name] = f
	return f
}

// Seed uploads the whole bundle to s through Store.Write with the manifest's checksums, so that
// every object carries the native checksum its provider keeps.
func Seed(t testing.TB, s providers.Store, f *Fixture) {
	t.Helper()
	for _, file := range f.M.Files {
		Put(t, s, file.Path, f.Data(t, file.Path), providers.Checksums(file.Sums))
	}
}

// Put writes one object.
func Put(t testing.TB, s providers.Store, key string, data []byte, sums providers.Checksums) {
	t.Helper()
	if _, err := s.Write(context.Background(), key, bytes.NewReader(data), providers.WriteOptions{Size: int64(len(data)), Checksums: sums}); err != nil {
		t.Fatalf("write %s: %v", key, err)
	}
}

// Del deletes one object.
func Del(t testing.TB, s providers.Store, key string) {
	t.Helper()
	if err := s.Delete(context.Background(), key, providers.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
}

// StoreOptions shrink the SDK retries: quick, bounded, still retrying.
func StoreOptions() providers.Options {
	return providers.Options{
		PartSize: 5 << 20, Concurrency: 4, PageSize: 100,
		Retry: providers.RetryOptions{MaxAttempts: 3, InitialBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond},
	}
}

// Backend is one provider under test: it opens stores over fresh prefixes, optionally through
// an *http.Client (fault injection).
type Backend struct {
	Name string
	// Open returns a store at prefix; hc (may be nil) carries every request.
	Open func(t testing.TB, prefix string, hc *http.Client) providers.Store
	// Native says whether the provider keeps checksums quick verification can compare.
	Native bool
	// Raw access for planting objects the Store would never write.
	S3  *emulators.S3
	Az  *emulators.Azurite
	GCS *emulators.GCS
}

var prefixSeq atomic.Int64

// FreshPrefix is a prefix no other test of this binary uses.
func FreshPrefix(name string) string { return fmt.Sprintf("%s-%04d", name, prefixSeq.Add(1)) }

// FileBackend opens stores under a temp dir.
func FileBackend(t testing.TB) *Backend {
	root := t.TempDir()
	return &Backend{Name: "file", Open: func(t testing.TB, prefix string, _ *http.Client) providers.Store {
		dir := filepath.Join(root, prefix)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return OpenStore(t, "file://"+dir, StoreOptions())
	}}
}

// OpenStore opens rawURL and closes it when the test ends.
func OpenStore(t testing.TB, rawURL string, o providers.Options) providers.Store {
	t.Helper()
	s, err := providers.Open(context.Background(), rawURL, o)
	if err != nil {
		t.Fatalf("open %s: %v", rawURL, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// S3Backend opens stores on the shared versitygw.
func S3Backend(t testing.TB) *Backend {
	gw := emulators.SharedVersityGW(t)
	if err := gw.Bucket(context.Background(), Bucket); err != nil {
		t.Fatal(err)
	}
	return &Backend{Name: "s3", Native: true, S3: gw, Open: func(t testing.TB, prefix string, hc *http.Client) providers.Store {
		o := StoreOptions()
		o.S3Credentials = credentials.NewStaticCredentialsProvider(gw.AccessKey, gw.SecretKey, "")
		o.HTTPClient = hc
		return OpenStore(t, gw.URL(Bucket, prefix), o)
	}}
}

// GCSBackend opens stores on the shared fake-gcs-server.
func GCSBackend(t testing.TB) *Backend {
	g := emulators.SharedFakeGCS(t)
	g.Bucket(Bucket)
	return &Backend{Name: "gcs", Native: true, GCS: g, Open: func(t testing.TB, prefix string, hc *http.Client) providers.Store {
		o := StoreOptions()
		o.HTTPClient = hc
		return OpenStore(t, "gs://"+Bucket+"/"+prefix, o)
	}}
}

// AzureBackend opens stores on the shared Azurite.
func AzureBackend(t testing.TB) *Backend {
	a := emulators.SharedAzurite(t)
	if err := a.Container(context.Background(), Bucket); err != nil {
		t.Fatal(err)
	}
	return &Backend{Name: "azure", Native: true, Az: a, Open: func(t testing.TB, prefix string, hc *http.Client) providers.Store {
		o := StoreOptions()
		o.AzureConnectionString = a.ConnectionString(a.Key)
		o.HTTPClient = hc
		return OpenStore(t, a.URL(Bucket, prefix), o)
	}}
}

// Backends returns every provider under test.
func Backends(t *testing.T) []*Backend {
	return []*Backend{FileBackend(t), S3Backend(t), GCSBackend(t), AzureBackend(t)}
}

// Ctx is a context that ends with the test, or after a minute.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// VerifyOptions make ranged deep reads happen on the test fixtures and retries quick.
//
// StallTimeout is generous: a local file read with the race detector on a loaded 2-core machine
// went 2 s without a byte once (TestDeepCallbackReinvoked); tests of stalls set their own.
func VerifyOptions() verify.Options {
	return verify.Options{Jobs: 8, RangeSize: 1 << 20, ReadAttempts: 3, RetryBackoff: time.Millisecond, StallTimeout: 10 * time.Second}
}

// ProvenByRead says whether a deep result rests on bytes read and hashed: the proving hash the
// manifest records (BLAKE3 if it has one, else SHA-256) is in the actual facts and equals the
// expected value.
func ProvenByRead(fr verify.FileResult) bool {
	if fr.Actual.Source != "read" {
		return false
	}
	if fr.Expected.BLAKE3 != "" || fr.Actual.BLAKE3 != "" {
		return fr.Actual.BLAKE3 != "" && fr.Actual.BLAKE3 == fr.Expected.BLAKE3
	}
	return fr.Actual.SHA256 != "" && fr.Actual.SHA256 == fr.Expected.SHA256
}

// ByPath indexes a replica's file results.
func ByPath(r verify.ReplicaResult) map[string]verify.FileResult {
	out := map[string]verify.FileResult{}
	for _, f := range r.Files {
		out[f.Path] = f
	}
	return out
}

// Dump renders a replica result for failure messages.
func Dump(r verify.ReplicaResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %v err=%q\n", r.URL, r.Status, r.Counts, r.Error)
	for _, f := range r.Files {
		fmt.Fprintf(&b, "  %-17s %s: %s\n", f.Status, f.Path, f.Detail)
	}
	return b.String()
}

// ExpectStatuses checks the status of each file named in want; every other manifest file must
// have status other, if given.
func ExpectStatuses(t *testing.T, r verify.ReplicaResult, want map[string][]verify.Status, other ...verify.Status) {
	t.Helper()
	got := ByPath(r)
	for p, ws := range want {
		f, ok := got[p]
		if !ok {
			t.Errorf("%s: no result for %s\n%s", r.URL, p, Dump(r))
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

// FlipBit returns a copy of b with one bit of byte i (mod len) flipped.
func FlipBit(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i%len(c)] ^= 0x10
	return c
}

// AzureBlocks commits data as staged blocks, with the given (unvalidated) Content-MD5 or none.
func AzureBlocks(t testing.TB, b *Backend, name string, data, md5 []byte) {
	t.Helper()
	c, err := azblob.NewClientFromConnectionString(b.Az.ConnectionString(b.Az.Key), nil)
	if err != nil {
		t.Fatal(err)
	}
	bb := c.ServiceClient().NewContainerClient(Bucket).NewBlockBlobClient(name)
	var ids []string
	for i := 0; i*(1<<20) < len(data); i++ {
		id := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "block-%06d", i))
		chunk := data[i*(1<<20) : min((i+1)*(1<<20), len(data))]
		if _, err := bb.StageBlock(Ctx(t), id, streaming.NopCloser(bytes.NewReader(chunk)), nil); err != nil {
			t.Fatalf("stage block: %v", err)
		}
		ids = append(ids, id)
	}
	o := &blockblob.CommitBlockListOptions{}
	if md5 != nil {
		o.HTTPHeaders = &blob.HTTPHeaders{BlobContentMD5: md5}
	}
	if _, err := bb.CommitBlockList(Ctx(t), ids, o); err != nil {
		t.Fatalf("commit block list: %v", err)
	}
}
