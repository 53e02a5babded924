package gcs

import (
	"context"
	"net/url"
	"strings"

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
	if u.Host == "" {
		return providers.Location{}, providers.BadURL(raw, "missing bucket: want gs://BUCKET/PREFIX")
	}
	if u.Port() != "" || strings.Contains(u.Host, ":") {
		return providers.Location{}, providers.BadURL(raw, "bucket %q cannot have a port (use ?endpoint= for S3-compatible stores)", u.Host)
	}
	if !bucketName(u.Host) || strings.Contains(u.Host, "..") {
		return providers.Location{}, providers.BadURL(raw, "bucket name %q is not valid (3-63 lower-case letters, digits, '.', '-', '_')", u.Host)
	}
	prefix, err := providers.CheckPrefix(u.Path)
	if err != nil {
		return providers.Location{}, providers.BadURL(raw, "%v", err)
	}
	return providers.Location{Scheme: "gs", Bucket: u.Host, Prefix: prefix}, nil
}

// formatURL is the canonical gs:// URL of loc.
func formatURL(loc providers.Location) string {
	return (&url.URL{Scheme: "gs", Host: loc.Bucket, Path: "/" + loc.Prefix}).String()
}

// bucketName reports whether name matches ^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$, checked by hand:
// that expression's bounded repetition compiles, at every start of every command, to hundreds of
// allocations.
func bucketName(name string) bool {
	if len(name) < 3 || len(name) > 222 || !lowerAlnum(name[0]) || !lowerAlnum(name[len(name)-1]) {
		return false
	}
	for i := 1; i < len(name)-1; i++ {
		if c := name[i]; !lowerAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func lowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
