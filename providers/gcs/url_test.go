package gcs_test

import (
	"testing"

	"lifeboat/providers"
	"lifeboat/providers/providertest"
)

// The gs:// grammar, through the factory this package registers with.
func TestParseURL(t *testing.T) {
	providertest.ParseURLs(t, []providertest.URLCase{
		{In: "gs://my_bucket.example/p", Want: providers.Location{Scheme: "gs", Bucket: "my_bucket.example", Prefix: "p"}},
		{In: "gs://bucket", Want: providers.Location{Scheme: "gs", Bucket: "bucket"}},
	}, []providertest.BadURLCase{
		{In: "gs:bucket/x", Says: "want gs://BUCKET/PREFIX"},
		{In: "gs://", Says: "missing bucket"},
		{In: "gs://bucket/x?userProject=p", Says: `unknown query parameter "userProject"`},
		{In: "gs://bucket/x?region=eu", Says: `unknown query parameter "region"`},
		{In: "gs://UPPER/x", Says: `bucket name "UPPER"`},
		{In: "gs://bucket:443/x", Says: "cannot have a port"},
		{In: "gs://bucket/a/../b", Says: `prefix "a/../b"`},
	})
}
