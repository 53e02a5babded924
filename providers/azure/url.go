package azure

import (
	"context"
	"net/url"
	"regexp"
	"strings"

	"lifeboat/providers"
)

// The az:// scheme: its URL grammar, hints and constructor, registered with the providers factory.
func init() {
	providers.Register(providers.Scheme{
		Name:   "az",
		Usage:  usage,
		Parse:  parseURL,
		Format: formatURL,
		Open: func(ctx context.Context, loc providers.Location, opts providers.Options) (providers.Store, error) {
			return newAzureStore(ctx, loc.Account, loc.Bucket, loc.Prefix, opts)
		},
		Hint: func(k providers.Kind) string {
			switch k {
			case providers.KindMisconfigured, providers.KindDenied:
				return "set AZURE_STORAGE_CONNECTION_STRING, or run 'az login' (DefaultAzureCredential); check the role assignment on the container"
			case providers.KindNotFound:
				return "check the account, the container name and the prefix"
			}
			return ""
		},
	})
}

const usage = "ACCOUNT/CONTAINER/PREFIX"

var containerRE = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

// parseURL is az://ACCOUNT/CONTAINER/PREFIX.
func parseURL(raw string, u *url.URL) (providers.Location, error) {
	if u.Host == "" {
		return providers.Location{}, providers.BadURL(raw, "missing account: want az://%s", usage)
	}
	if !accountName(u.Host) {
		return providers.Location{}, providers.BadURL(raw, "storage account name %q is not valid (3-24 lower-case letters and digits)", u.Host)
	}
	cont, prefix, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if cont == "" {
		return providers.Location{}, providers.BadURL(raw, "missing container: want az://%s", usage)
	}
	if !containerRE.MatchString(cont) || len(cont) < 3 || len(cont) > 63 {
		return providers.Location{}, providers.BadURL(raw, "container name %q is not valid (3-63 lower-case letters, digits and single '-')", cont)
	}
	prefix, err := providers.CheckPrefix(prefix)
	if err != nil {
		return providers.Location{}, providers.BadURL(raw, "%v", err)
	}
	return providers.Location{Scheme: "az", Account: u.Host, Bucket: cont, Prefix: prefix}, nil
}

// formatURL is the canonical az:// URL of loc.
func formatURL(loc providers.Location) string {
	p := loc.Bucket
	if loc.Prefix != "" {
		p += "/" + loc.Prefix
	}
	return (&url.URL{Scheme: "az", Host: loc.Account, Path: "/" + p}).String()
}

// accountName reports whether name matches ^[a-z0-9]{3,24}$, checked by hand to keep a bounded
// repetition out of every command's start-up.
func accountName(name string) bool {
	if len(name) < 3 || len(name) > 24 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
