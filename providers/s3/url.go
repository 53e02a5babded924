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
	if u.Host == "" {
		return providers.Location{}, providers.BadURL(raw, "missing bucket: want s3://BUCKET/PREFIX?region=R&endpoint=URL")
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
	q := u.Query()
	loc := providers.Location{Scheme: "s3", Bucket: u.Host, Prefix: prefix, Region: q.Get("region")}
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

// bucketName reports whether name matches ^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$, checked by hand:
// that expression's bounded repetition compiles, at every start of every command, to hundreds of
// allocations.
func bucketName(name string) bool {
	if len(name) < 3 || len(name) > 63 || !lowerAlnum(name[0]) || !lowerAlnum(name[len(name)-1]) {
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
