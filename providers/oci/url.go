package oci

import (
	"context"
	"net/url"
	"regexp"
	"strings"

	"lifeboat/providers"
)

// The oci:// scheme: its URL grammar, what a registry lacks and the constructor, registered with
// the providers factory.
func init() {
	providers.Register(providers.Scheme{
		Name:        "oci",
		Usage:       usage,
		Credentials: "log in with `docker login`/`oras login` (Docker config.json and its credential helpers) instead",
		Parse:       parseURL,
		Format:      formatURL,
		Open: func(_ context.Context, loc providers.Location, opts providers.Options) (providers.Store, error) {
			return newRegistryStore(loc, opts)
		},
		Lacks: lacks,
	})
}

// lacks are what a registry cannot do, so that a fleet file naming one as its state store is
// refused as it is read (providers.CheckStateLocation).
var lacks = []providers.Lack{
	{Capability: providers.CapCompareAndSwap, Why: "the OCI distribution API has no conditional write: a tag is overwritten by whoever pushes last, so two holders could both believe they own the failover lock"},
	{Capability: providers.CapPrefixListing, Why: "a registry lists tags and (sometimes) repositories, never objects by key prefix, so the journal and drill history could not be read back"},
}

const usage = "REGISTRY/REPO[:TAG|@sha256:HEX]"

// The grammar of distribution/reference: a repository is path components of lower-case letters
// and digits joined by '.', '_', '__' or runs of '-'; a tag is at most 128 word characters, '.'
// and '-', not starting with either; Lifeboat digests are SHA-256.
var (
	componentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	hostRE      = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?$`)
)

// validTag reports whether t matches ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ (checked by hand to keep
// a bounded repetition out of every command's start-up).
func validTag(t string) bool {
	if t == "" || len(t) > 128 || t[0] == '.' || t[0] == '-' {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || 'A' <= c && c <= 'Z') && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// validDigest reports whether d is "sha256:" and 64 lower-case hex digits.
func validDigest(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// parseURL is oci://REGISTRY/REPO[:TAG|@sha256:HEX].
func parseURL(raw string, u *url.URL) (providers.Location, error) {
	if u.Host == "" {
		return providers.Location{}, providers.BadURL(raw, "missing registry: want oci://%s", usage)
	}
	if !hostRE.MatchString(u.Host) {
		return providers.Location{}, providers.BadURL(raw, "registry %q is not a host name with an optional port", u.Host)
	}
	repo := strings.TrimPrefix(u.Path, "/")
	loc := providers.Location{Scheme: "oci", Registry: strings.ToLower(u.Host)}
	if i := strings.Index(repo, "@"); i >= 0 {
		repo, loc.Digest = repo[:i], repo[i+1:]
		if !validDigest(loc.Digest) {
			return providers.Location{}, providers.BadURL(raw, "digest %q is not sha256: and 64 lower-case hex digits", loc.Digest)
		}
	} else if i := strings.LastIndex(repo, ":"); i >= 0 && !strings.Contains(repo[i:], "/") {
		repo, loc.Tag = repo[:i], repo[i+1:]
		if !validTag(loc.Tag) {
			return providers.Location{}, providers.BadURL(raw, "tag %q is not valid (up to 128 letters, digits, '_', '.', '-'; not starting with '.' or '-')", loc.Tag)
		}
	}
	if repo == "" {
		return providers.Location{}, providers.BadURL(raw, "missing repository: want oci://%s", usage)
	}
	for _, c := range strings.Split(repo, "/") {
		if !componentRE.MatchString(c) {
			return providers.Location{}, providers.BadURL(raw, "repository %q is not valid: component %q (lower-case letters and digits, joined by '.', '_', '__' or '-')", repo, c)
		}
	}
	if len(loc.Registry)+1+len(repo) > 255 {
		return providers.Location{}, providers.BadURL(raw, "repository name longer than 255 characters")
	}
	loc.Repository = repo
	return loc, nil
}

// formatURL is the canonical oci:// reference of loc.
func formatURL(loc providers.Location) string {
	s := "oci://" + loc.Registry + "/" + loc.Repository
	if loc.Digest != "" {
		return s + "@" + loc.Digest
	}
	if loc.Tag != "" {
		return s + ":" + loc.Tag
	}
	return s
}
