package azure_test

// The conformance suite (providertest) against Azure Blob Storage (Azurite),
// and the missing-container check.

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
	_ "lifeboat/providers/azure"
	"lifeboat/providers/providertest"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
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

func TestAzure(t *testing.T) {
	t.Parallel()
	a := sharedAzure(t)
	newStore := func(t *testing.T) providers.Store {
		return open(t, azURL(testBucket, freshPrefix()), azOptions(a, a.Key))
	}
	providertest.Run(t, newStore,
		providertest.WithDenied(func(t *testing.T) providers.Store {
			return open(t, azURL(testBucket, freshPrefix()), azOptions(a, wrongAzureKey))
		}),
		providertest.WithSub(func(t *testing.T, s providers.Store, sub string) providers.Store {
			return open(t, subURL(t, s, sub), azOptions(a, a.Key))
		}),
		providertest.WithPlant(func(t *testing.T, s providers.Store, raw string, data []byte) error {
			if strings.ContainsAny(raw, "\x01") {
				// Azurite stores such a name but then fails every listing with HTTP 500 (Azure
				// itself returns it percent-encoded with Encoded="true").
				return errors.New("Azurite cannot list names with control characters")
			}
			c, err := azblob.NewClientFromConnectionString(a.ConnectionString(a.Key), nil)
			if err != nil {
				return err
			}
			u, _ := url.Parse(s.String())
			name := strings.TrimPrefix(strings.TrimPrefix(u.Path, "/"+testBucket), "/") + raw
			_, err = c.UploadBuffer(t.Context(), testBucket, name, data, nil)
			return err
		}),
	)
}

// A missing bucket or container is ErrNotFound, with the store named (each backend runs its
// case of this check; file:// runs it in package providers).
func TestMissingBucket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stores := map[string]func(t *testing.T) providers.Store{
		"az": func(t *testing.T) providers.Store {
			a := sharedAzure(t)
			return open(t, azURL("no-such-container", "x"), azOptions(a, a.Key))
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
