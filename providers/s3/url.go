package s3

import (
	"context"
	"net/url"
	"strings"

	"lifeboat/providers"
)

// The s3:// scheme: its URL grammar, hints and constructor, registered with the providers factory.
func init() {
	providers.Register(providers.Scheme{
		Name:   "s3",
		Usage:  "BUCKET/PREFIX?region=R&endpoint=URL",
		Query:  []string{"region", "endpoint"},
		Parse:  parseURL,
		Format: formatURL,
		Open: func(ctx context.Context, loc providers.Location, opts providers.Options) (providers.Store, error) {
			return newS3Store(ctx, loc.Bucket, loc.Prefix, loc.Region, loc.Endpoint, opts)
		},
		Hint: func(k providers.Kind) string {
			switch k {
			case providers.KindMisconfigured, providers.KindDenied:
				return "set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_REGION or ?region=), and check the bucket policy"
			case providers.KindNotFound:
				return "check the bucket name and the prefix (and ?region= for S3)"
			}
			return ""
		},
	})
}

// parseURL is s3://BUCKET/PREFIX[?region=R][&endpoint=URL].
func parseURL(raw string, u *url.URL) (providers.Location, error) {
	bucket, prefix, err := providers.BucketURL(raw, u, "s3://BUCKET/PREFIX?region=R&endpoint=URL", 63)
	if err != nil {
		return providers.Location{}, err
	}
	q := u.Query()
	loc := providers.Location{Scheme: "s3", Bucket: bucket, Prefix: prefix, Region: q.Get("region")}
	if ep := q.Get("endpoint"); ep != "" {
		if loc.Endpoint, err = endpointURL(raw, ep); err != nil {
			return providers.Location{}, err
		}
	}
	return loc, nil
}

// formatURL is the canonical s3:// URL of loc.
func formatURL(loc providers.Location) string {
	u := &url.URL{Scheme: "s3", Host: loc.Bucket, Path: "/" + loc.Prefix}
	q := url.Values{}
	if loc.Region != "" {
		q.Set("region", loc.Region)
	}
	if loc.Endpoint != "" {
		q.Set("endpoint", loc.Endpoint)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// endpointURL checks an ?endpoint= value: http(s), a host, nothing else.
func endpointURL(raw, ep string) (string, error) {
	eu, err := url.Parse(ep)
	if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
		return "", providers.BadURL(raw, "endpoint must be an http:// or https:// URL with a host")
	}
	if eu.User != nil {
		return "", providers.BadURL(raw, "credentials do not belong in the endpoint URL")
	}
	if eu.RawQuery != "" || eu.Fragment != "" {
		return "", providers.BadURL(raw, "endpoint must not have a query or fragment")
	}
	return strings.TrimSuffix(eu.String(), "/"), nil
}

// bucketName is providers.BucketName for s3:// (at most 63 characters).
func bucketName(name string) bool { return providers.BucketName(name, 63) }
