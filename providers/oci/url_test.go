package oci_test

import (
	"strings"
	"testing"

	"lifeboat/providers"
	"lifeboat/providers/providertest"
)

// The oci:// grammar (distribution/reference's), through the factory this package registers with.
func TestParseURL(t *testing.T) {
	providertest.ParseURLs(t, []providertest.URLCase{
		{In: "oci://ghcr.io/acme/models/llama-3.3-70b-awq:v1.2", Want: providers.Location{Scheme: "oci", Registry: "ghcr.io", Repository: "acme/models/llama-3.3-70b-awq", Tag: "v1.2"}},
		{In: "oci://127.0.0.1:5000/m", Want: providers.Location{Scheme: "oci", Registry: "127.0.0.1:5000", Repository: "m"}},
		{In: "OCI://Registry.Example:443/a__b/c.d-e@sha256:" + strings.Repeat("ab", 32), Want: providers.Location{Scheme: "oci", Registry: "registry.example:443", Repository: "a__b/c.d-e", Digest: "sha256:" + strings.Repeat("ab", 32)}},
		{In: "oci://[::1]:5000/m:Latest_1", Want: providers.Location{Scheme: "oci", Registry: "[::1]:5000", Repository: "m", Tag: "Latest_1"}},
	}, []providertest.BadURLCase{
		{In: "oci://", Says: "missing registry"},
		{In: "oci://ghcr.io", Says: "missing repository"},
		{In: "oci://ghcr.io/:v1", Says: "missing repository"},
		{In: "oci:ghcr.io/m", Says: "want oci://REGISTRY/REPO"},
		{In: "oci://ghcr.io/Upper/m", Says: `component "Upper"`},
		{In: "oci://ghcr.io/a//b", Says: `component ""`},
		{In: "oci://ghcr.io/a/../b", Says: `component ".."`},
		{In: "oci://ghcr.io/m:-bad", Says: `tag "-bad"`},
		{In: "oci://ghcr.io/m:" + strings.Repeat("t", 129), Says: "tag"},
		{In: "oci://ghcr.io/m:a%2Cb", Says: `tag "a,b"`},
		{In: "oci://ghcr.io/m@sha256:abc", Says: `digest "sha256:abc"`},
		{In: "oci://ghcr.io/m@sha512:" + strings.Repeat("ab", 64), Says: "digest"},
		{In: "oci://ghcr.io/m?plain=1", Says: `unknown query parameter "plain"`},
		{In: "oci://host_name/m", Says: `registry "host_name"`},
		{In: "oci://robot:pw@ghcr.io/m", Says: "docker login"},
	})
}

// A registry cannot hold control state: the scheme registers what it lacks.
func TestLacks(t *testing.T) {
	lacks := providers.Lacks("oci")
	if len(lacks) != 2 || lacks[0].Capability != providers.CapCompareAndSwap || lacks[1].Capability != providers.CapPrefixListing {
		t.Fatalf("Lacks(oci) = %+v, want compare-and-swap and listing by prefix", lacks)
	}
}
