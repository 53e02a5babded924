//go:build integration

package providers_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"lifeboat/internal/emulators"
	"lifeboat/providers"
	"lifeboat/providers/providertest"

	"github.com/aws/aws-sdk-go-v2/credentials"
)

func TestMain(m *testing.M) {
	// No test may reach for cloud metadata servers: AWS IMDS off, and GCS pointed at the
	// in-process emulator before any client exists.
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	if _, err := emulators.InitFakeGCS(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(emulators.Main(m))
}

const testBucket = "lifeboat-test"

var prefixSeq atomic.Int64

func freshPrefix() string { return fmt.Sprintf("suite/p%05d", prefixSeq.Add(1)) }

// testOptions are small enough that listings cross pages and large objects span several parts,
// with quick, bounded retries.
func testOptions() providers.Options {
	return providers.Options{
		PageSize: 100, PartSize: 5 << 20, Concurrency: 4,
		Retry: providers.RetryOptions{MaxAttempts: 3, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond},
	}
}

func open(t *testing.T, rawURL string, opts providers.Options) providers.Store {
	t.Helper()
	s, err := providers.Open(t.Context(), rawURL, opts)
	if err != nil {
		t.Fatalf("open %s: %v", rawURL, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// subURL is the URL of a store one prefix level below s (its String() is its URL).
func subURL(t *testing.T, s providers.Store, sub string) string {
	u, err := url.Parse(s.String())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + sub
	return u.String()
}

func TestFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	newStore := func(t *testing.T) providers.Store {
		dir := filepath.Join(root, freshPrefix()) // the directory plays the bucket: it must exist
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return open(t, "file://"+dir, testOptions())
	}
	providertest.Run(t, newStore,
		providertest.WithSub(func(t *testing.T, s providers.Store, sub string) providers.Store {
			return open(t, subURL(t, s, sub), testOptions())
		}),
		providertest.WithPlant(func(t *testing.T, s providers.Store, raw string, data []byte) error {
			if strings.Contains(raw, "//") || strings.Contains(raw, "/./") || strings.Contains(raw, "/../") {
				return errors.New("a file system cannot hold that name")
			}
			u, _ := url.Parse(s.String())
			p := filepath.Join(u.Path, raw)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			return os.WriteFile(p, data, 0o644)
		}),
	)
}

func s3Options(gw *emulators.S3, secret string) providers.Options {
	o := testOptions()
	o.S3Credentials = credentials.NewStaticCredentialsProvider(gw.AccessKey, secret, "")
	return o
}

// sharedS3 is the binary's versitygw with the test bucket created.
func sharedS3(t *testing.T) *emulators.S3 {
	t.Helper()
	gw := emulators.SharedVersityGW(t)
	if err := gw.Bucket(t.Context(), testBucket); err != nil {
		t.Fatal(err)
	}
	return gw
}

func sharedGCS(t *testing.T) *emulators.GCS {
	t.Helper()
	g := emulators.SharedFakeGCS(t)
	g.Bucket(testBucket)
	return g
}

func azURL(container, prefix string) string {
	return "az://" + emulators.AzuriteAccount + "/" + container + "/" + prefix
}

func azOptions(a *emulators.Azurite, key string) providers.Options {
	o := testOptions()
	o.AzureConnectionString = a.ConnectionString(key)
	return o
}

func sharedAzure(t *testing.T) *emulators.Azurite {
	t.Helper()
	a := emulators.SharedAzurite(t)
	if err := a.Container(t.Context(), testBucket); err != nil {
		t.Fatal(err)
	}
	return a
}

// wrongAzureKey is a well-formed account key the emulator does not accept.
const wrongAzureKey = "d3JvbmdrZXl3cm9uZ2tleXdyb25na2V5d3JvbmdrZXl3cm9uZ2tleXdyb25na2V5d3Jvbmc="

// A missing root directory is ErrNotFound, with the store named (the cloud stores run their
// case of this check in their own packages).
func TestMissingBucket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stores := map[string]func(t *testing.T) providers.Store{
		"file": func(t *testing.T) providers.Store {
			return open(t, filepath.Join(t.TempDir(), "does-not-exist"), testOptions())
		},
	}
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := mk(t)
			err := s.List(ctx, "", func(providers.Object) error { return nil })
			if !errors.Is(err, providers.ErrNotFound) {
				t.Fatalf("list of a missing bucket: %v", err)
			}
			if !strings.Contains(err.Error(), strings.SplitN(s.String(), "?", 2)[0]) {
				t.Errorf("error %q does not name the store %q", err, s.String())
			}
		})
	}
}
