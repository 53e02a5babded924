package gcs

import (
	"context"
	"net/url"

	"lifeboat/providers"
)

// The gs:// scheme: its URL grammar, hints and constructor, registered with the providers factory.
func init() {
	providers.Register(providers.Scheme{
		Name:   "gs",
		Usage:  "BUCKET/PREFIX",
		Parse:  parseURL,
		Format: formatURL,
		Open: func(ctx context.Context, loc providers.Location, opts providers.Options) (providers.Store, error) {
			return newGCSStore(ctx, loc.Bucket, loc.Prefix, opts)
		},
		Hint: func(k providers.Kind) string {
			switch k {
			case providers.KindMisconfigured, providers.KindDenied:
				return "set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, or run 'gcloud auth application-default login'; check the bucket's IAM"
			case providers.KindNotFound:
				return "check the bucket name and the prefix"
			}
			return ""
		},
	})
}

// parseURL is gs://BUCKET/PREFIX.
func parseURL(raw string, u *url.URL) (providers.Location, error) {
	bucket, prefix, err := providers.BucketURL(raw, u, "gs://BUCKET/PREFIX", 222)
	if err != nil {
		return providers.Location{}, err
	}
	return providers.Location{Scheme: "gs", Bucket: bucket, Prefix: prefix}, nil
}

// formatURL is the canonical gs:// URL of loc.
func formatURL(loc providers.Location) string {
	return (&url.URL{Scheme: "gs", Host: loc.Bucket, Path: "/" + loc.Prefix}).String()
}

// bucketName is providers.BucketName for gs:// (at most 222 characters).
func bucketName(name string) bool { return providers.BucketName(name, 222) }
