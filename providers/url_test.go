package providers_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"lifeboat/providers"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want providers.Location
	}{
		{"/abs/dir", providers.Location{Scheme: "file", Path: "/abs/dir"}},
		{"./rel/dir/", providers.Location{Scheme: "file", Path: "rel/dir"}},
		{"rel:with:colons", providers.Location{Scheme: "file", Path: "rel:with:colons"}},
		{"file:///abs/dir", providers.Location{Scheme: "file", Path: "/abs/dir"}},
		{"file://localhost/abs", providers.Location{Scheme: "file", Path: "/abs"}},
		{"file://./.lifeboat", providers.Location{Scheme: "file", Path: ".lifeboat"}},
		{"s3://models-use1/llama-3.3-70b-awq/", providers.Location{Scheme: "s3", Bucket: "models-use1", Prefix: "llama-3.3-70b-awq"}},
		{"s3://b-1/", providers.Location{Scheme: "s3", Bucket: "b-1"}},
		{"S3://bucket", providers.Location{Scheme: "s3", Bucket: "bucket"}},
		{"s3://bucket/a/b?region=eu-west-1&endpoint=http://127.0.0.1:9000/", providers.Location{Scheme: "s3", Bucket: "bucket", Prefix: "a/b", Region: "eu-west-1", Endpoint: "http://127.0.0.1:9000"}},
		{"s3://bucket/with%20space/x", providers.Location{Scheme: "s3", Bucket: "bucket", Prefix: "with space/x"}},
		{"gs://my_bucket.example/p", providers.Location{Scheme: "gs", Bucket: "my_bucket.example", Prefix: "p"}},
		{"az://acct/models/llama-3.3-70b-awq/", providers.Location{Scheme: "az", Account: "acct", Bucket: "models", Prefix: "llama-3.3-70b-awq"}},
		{"az://devstoreaccount1/c-1", providers.Location{Scheme: "az", Account: "devstoreaccount1", Bucket: "c-1"}},
		{"oci://ghcr.io/acme/models/llama-3.3-70b-awq:v1.2", providers.Location{Scheme: "oci", Registry: "ghcr.io", Repository: "acme/models/llama-3.3-70b-awq", Tag: "v1.2"}},
		{"oci://127.0.0.1:5000/m", providers.Location{Scheme: "oci", Registry: "127.0.0.1:5000", Repository: "m"}},
		{"OCI://Registry.Example:443/a__b/c.d-e@sha256:" + strings.Repeat("ab", 32), providers.Location{Scheme: "oci", Registry: "registry.example:443", Repository: "a__b/c.d-e", Digest: "sha256:" + strings.Repeat("ab", 32)}},
		{"oci://[::1]:5000/m:Latest_1", providers.Location{Scheme: "oci", Registry: "[::1]:5000", Repository: "m", Tag: "Latest_1"}},
	} {
		got, err := providers.ParseURL(tc.in)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseURL(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if again, err := providers.ParseURL(got.String()); err != nil || again != got {
			t.Errorf("round trip of %q via %q: %+v, %v", tc.in, got.String(), again, err)
		}
	}
}

func TestParseURLErrors(t *testing.T) {
	for _, tc := range []struct{ in, says string }{
		{"", "empty"},
		{"   ", "empty"},
		{"http://example.com/x", `unknown scheme "http"`},
		{"ftp://host/x", `unknown scheme "ftp"`},
		{"s3:bucket/x", "want s3://BUCKET/PREFIX"},
		{"s3://", "missing bucket"},
		{"s3:///prefix", "missing bucket"},
		{"s3://Bad_Bucket!/x", `bucket name "Bad_Bucket!"`},
		{"s3://ab/x", `bucket name "ab"`},
		{"s3://bucket:9000/x", "cannot have a port"},
		{"s3://bucket/x?regoin=us", `unknown query parameter "regoin"`},
		{"s3://bucket/x?region=", `query parameter "region" needs exactly one non-empty value`},
		{"s3://bucket/x?region=a&region=b", `query parameter "region"`},
		{"s3://bucket/x?endpoint=localhost:9000", "endpoint must be an http:// or https:// URL"},
		{"s3://bucket/x?endpoint=ftp://h", "endpoint must be an http:// or https:// URL"},
		{"s3://bucket/a/../b", `prefix "a/../b"`},
		{"s3://bucket/a//b", `prefix "a//b"`},
		{"s3://bucket/x#frag", "fragment"},
		{"gs://bucket/x?userProject=p", `unknown query parameter "userProject"`},
		{"gs://UPPER/x", `bucket name "UPPER"`},
		{"az://acct", "missing container"},
		{"az://acct/", "missing container"},
		{"az://Acct-Name/c/x", `storage account name "Acct-Name"`},
		{"az://acct/ab/x", `container name "ab"`},
		{"az://acct/bad--name/x", `container name "bad--name"`},
		{"az://acct/cont/a/./b", `prefix "a/./b"`},
		{"file://otherhost/x", `not host "otherhost"`},
		{"s3://bucket/%zz", "invalid URL escape"},
		{"oci://", "missing registry"},
		{"oci://ghcr.io", "missing repository"},
		{"oci://ghcr.io/:v1", "missing repository"},
		{"oci:ghcr.io/m", "want oci://REGISTRY/REPO"},
		{"oci://ghcr.io/Upper/m", `component "Upper"`},
		{"oci://ghcr.io/a//b", `component ""`},
		{"oci://ghcr.io/a/../b", `component ".."`},
		{"oci://ghcr.io/m:-bad", `tag "-bad"`},
		{"oci://ghcr.io/m:" + strings.Repeat("t", 129), "tag"},
		{"oci://ghcr.io/m:a%2Cb", `tag "a,b"`},
		{"oci://ghcr.io/m@sha256:abc", `digest "sha256:abc"`},
		{"oci://ghcr.io/m@sha512:" + strings.Repeat("ab", 64), "digest"},
		{"oci://ghcr.io/m?plain=1", `unknown query parameter "plain"`},
		{"oci://host_name/m", `registry "host_name"`},
	} {
		_, err := providers.ParseURL(tc.in)
		if err == nil {
			t.Errorf("ParseURL(%q) accepted", tc.in)
			continue
		}
		if !errors.Is(err, providers.ErrInvalidURL) {
			t.Errorf("ParseURL(%q): %v does not wrap ErrInvalidURL", tc.in, err)
		}
		if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ParseURL(%q) = %q, want it to say %q", tc.in, err, tc.says)
		}
	}
}

// Credentials in a URL are refused without being repeated.
func TestURLCredentialsRefusedAndHidden(t *testing.T) {
	for _, in := range []string{
		"s3://AKIAEXAMPLE:s3cr3tPassw0rd@bucket/x",
		"s3://bucket/x?endpoint=http://admin:s3cr3tPassw0rd@127.0.0.1:9000",
		"gs://user:s3cr3tPassw0rd@bucket/x",
		"az://acct:s3cr3tPassw0rd@acct/c/x",
		"s3://user:s3cr3tPassw0rd@bucket/%zz",
		"oci://robot:s3cr3tPassw0rd@ghcr.io/acme/m:v1",
		"oci://s3cr3tPassw0rd@127.0.0.1:5000/m",
	} {
		_, err := providers.Open(context.Background(), in, providers.Options{})
		if err == nil {
			t.Errorf("Open(%q) accepted credentials", in)
			continue
		}
		if strings.Contains(err.Error(), "s3cr3tPassw0rd") {
			t.Errorf("Open(%q) error shows the secret: %v", in, err)
		}
		if !errors.Is(err, providers.ErrInvalidURL) {
			t.Errorf("Open(%q): %v does not wrap ErrInvalidURL", in, err)
		}
	}
}

// A registry cannot hold control state, and says why, naming both missing capabilities.
func TestCheckStateLocation(t *testing.T) {
	for _, ok := range []string{"/var/lib/lifeboat", "s3://b-1/state", "gs://bkt/x", "az://acct/c-1/x"} {
		loc, err := providers.ParseURL(ok)
		if err != nil {
			t.Fatal(err)
		}
		if err := providers.CheckStateLocation(loc); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	loc, err := providers.ParseURL("oci://127.0.0.1:5000/lifeboat/state:v1")
	if err != nil {
		t.Fatal(err)
	}
	err = providers.CheckStateLocation(loc)
	if !errors.Is(err, providers.ErrUnsupported) {
		t.Fatalf("oci:// state: %v, want ErrUnsupported", err)
	}
	for _, says := range []string{providers.CapCompareAndSwap, providers.CapPrefixListing, "oci://127.0.0.1:5000/lifeboat/state:v1"} {
		if !strings.Contains(err.Error(), says) {
			t.Errorf("%q does not say %q", err, says)
		}
	}
}

func TestValidateKey(t *testing.T) {
	for _, k := range []string{"a", "model/config.json", "dir with space/ü 文件.bin", "a+b=c&d", "..hidden", "a/.b", "x..y", strings.Repeat("k", providers.MaxKeyLen)} {
		if err := providers.ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q): %v", k, err)
		}
	}
	for _, k := range []string{"", "/a", "a/", "a//b", ".", "..", "a/..", "../a", "a/./b", "a\\b", "a\x00b", "a\x1fb", "a\x7fb", "\xff", strings.Repeat("k", providers.MaxKeyLen+1)} {
		err := providers.ValidateKey(k)
		if !errors.Is(err, providers.ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"a/b", "a/../b", "", "/", "ü/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		if providers.ValidateKey(k) != nil {
			return
		}
		for _, el := range strings.Split(k, "/") {
			if el == "" || el == "." || el == ".." {
				t.Fatalf("accepted %q", k)
			}
		}
	})
}
