package s3_test

// The conformance suite (providertest) against an S3-compatible store (versitygw),
// and the missing-bucket check.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/providers"
	"lifeboat/providers/providertest"
	_ "lifeboat/providers/s3"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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

func TestS3(t *testing.T) {
	t.Parallel()
	gw := sharedS3(t)
	newStore := func(t *testing.T) providers.Store {
		return open(t, gw.URL(testBucket, freshPrefix()), s3Options(gw, gw.SecretKey))
	}
	providertest.Run(t, newStore,
		providertest.WithDenied(func(t *testing.T) providers.Store {
			return open(t, gw.URL(testBucket, freshPrefix()), s3Options(gw, "wrong-"+gw.SecretKey))
		}),
		providertest.WithSub(func(t *testing.T, s providers.Store, sub string) providers.Store {
			return open(t, subURL(t, s, sub), s3Options(gw, gw.SecretKey))
		}),
		providertest.WithPlant(func(t *testing.T, s providers.Store, raw string, data []byte) error {
			u, _ := url.Parse(s.String())
			_, err := gw.Client().PutObject(t.Context(), &s3.PutObjectInput{
				Bucket: aws.String(testBucket), Key: aws.String(strings.TrimPrefix(u.Path, "/") + raw), Body: bytes.NewReader(data),
			})
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
		"s3": func(t *testing.T) providers.Store {
			gw := sharedS3(t)
			return open(t, gw.URL("no-such-bucket", "x"), s3Options(gw, gw.SecretKey))
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
