package s3_test

import (
	"testing"

	"lifeboat/providers"
	"lifeboat/providers/providertest"
)

// The s3:// grammar, through the factory this package registers with.
func TestParseURL(t *testing.T) {
	providertest.ParseURLs(t, []providertest.URLCase{
		{In: "s3://models-use1/llama-3.3-70b-awq/", Want: providers.Location{Scheme: "s3", Bucket: "models-use1", Prefix: "llama-3.3-70b-awq"}},
		{In: "s3://b-1/", Want: providers.Location{Scheme: "s3", Bucket: "b-1"}},
		{In: "S3://bucket", Want: providers.Location{Scheme: "s3", Bucket: "bucket"}},
		{In: "s3://bucket/a/b?region=eu-west-1&endpoint=http://127.0.0.1:9000/", Want: providers.Location{Scheme: "s3", Bucket: "bucket", Prefix: "a/b", Region: "eu-west-1", Endpoint: "http://127.0.0.1:9000"}},
		{In: "s3://bucket/with%20space/x", Want: providers.Location{Scheme: "s3", Bucket: "bucket", Prefix: "with space/x"}},
	}, []providertest.BadURLCase{
		{In: "s3:bucket/x", Says: "want s3://BUCKET/PREFIX"},
		{In: "s3://", Says: "missing bucket"},
		{In: "s3:///prefix", Says: "missing bucket"},
		{In: "s3://Bad_Bucket!/x", Says: `bucket name "Bad_Bucket!"`},
		{In: "s3://ab/x", Says: `bucket name "ab"`},
		{In: "s3://bucket:9000/x", Says: "cannot have a port"},
		{In: "s3://bucket/x?regoin=us", Says: `unknown query parameter "regoin"`},
		{In: "s3://bucket/x?region=", Says: `query parameter "region" needs exactly one non-empty value`},
		{In: "s3://bucket/x?region=a&region=b", Says: `query parameter "region"`},
		{In: "s3://bucket/x?endpoint=localhost:9000", Says: "endpoint must be an http:// or https:// URL"},
		{In: "s3://bucket/x?endpoint=ftp://h", Says: "endpoint must be an http:// or https:// URL"},
		{In: "s3://bucket/a/../b", Says: `prefix "a/../b"`},
		{In: "s3://bucket/a//b", Says: `prefix "a//b"`},
		{In: "s3://bucket/x#frag", Says: "fragment"},
		{In: "s3://bucket/%zz", Says: "invalid URL escape"},
	})
}
