package gcs_test

// The conformance suite (providertest) against Google Cloud Storage (fake-gcs-server),
// and the missing-bucket check.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/providers"
	_ "lifeboat/providers/gcs"
	"lifeboat/providers/providertest"

	"github.com/fsouza/fake-gcs-server/fakestorage"
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

var (
	testOptions = providertest.Options
	freshPrefix = providertest.FreshPrefix
	open        = providertest.Open
	subURL      = providertest.SubURL
)

func sharedGCS(t *testing.T) *emulators.GCS {
	t.Helper()
	g := emulators.SharedFakeGCS(t)
	g.Bucket(testBucket)
	return g
}

func TestGCS(t *testing.T) {
	t.Parallel()
	g := sharedGCS(t)
	newStore := func(t *testing.T) providers.Store {
		return open(t, "gs://"+testBucket+"/"+freshPrefix(), testOptions())
	}
	providertest.Run(t, newStore,
		providertest.WithDenied(func(t *testing.T) providers.Store {
			return open(t, "gs://"+emulators.DeniedGCSBucket+"/x", testOptions())
		}),
		providertest.WithSub(func(t *testing.T, s providers.Store, sub string) providers.Store {
			return open(t, subURL(t, s, sub), testOptions())
		}),
		providertest.WithPlant(func(t *testing.T, s providers.Store, raw string, data []byte) error {
			u, _ := url.Parse(s.String())
			g.Server.CreateObject(fakestorage.Object{
				ObjectAttrs: fakestorage.ObjectAttrs{BucketName: testBucket, Name: strings.TrimPrefix(u.Path, "/") + raw},
				Content:     data,
			})
			return nil
		}),
	)
}

// A missing bucket or container is ErrNotFound, with the store named (each backend runs its
// case of this check; file:// runs it in package providers).
func TestMissingBucket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stores := map[string]func(t *testing.T) providers.Store{
		"gs": func(t *testing.T) providers.Store {
			sharedGCS(t)
			return open(t, "gs://no-such-bucket/x", testOptions())
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
