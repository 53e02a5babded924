package providers_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"lifeboat/providers"
	"lifeboat/providers/providertest"
)

// The grammar of file:// and plain paths, this package's own scheme, and the rules every store
// URL follows; each store package tests its own scheme's grammar (providers/s3/url_test.go, …).
func TestParseURL(t *testing.T) {
	providertest.ParseURLs(t, []providertest.URLCase{
		{In: "/abs/dir", Want: providers.Location{Scheme: "file", Path: "/abs/dir"}},
		{In: "./rel/dir/", Want: providers.Location{Scheme: "file", Path: "rel/dir"}},
		{In: "rel:with:colons", Want: providers.Location{Scheme: "file", Path: "rel:with:colons"}},
		{In: "file:///abs/dir", Want: providers.Location{Scheme: "file", Path: "/abs/dir"}},
		{In: "file://localhost/abs", Want: providers.Location{Scheme: "file", Path: "/abs"}},
		{In: "file://./.lifeboat", Want: providers.Location{Scheme: "file", Path: ".lifeboat"}},
		{In: "FILE:///abs", Want: providers.Location{Scheme: "file", Path: "/abs"}},
	}, []providertest.BadURLCase{
		{In: "", Says: "empty"},
		{In: "   ", Says: "empty"},
		{In: "http://example.com/x", Says: `unknown scheme "http"`},
		{In: "ftp://host/x", Says: `unknown scheme "ftp"`},
		{In: "ftp://host/x", Says: "no store registered for scheme ftp://"},
		{In: "file:abs", Says: "want file:///abs/path"},
		{In: "file://otherhost/x", Says: `not host "otherhost"`},
		{In: "file://", Says: "empty path"},
		{In: "file:///x?a=1", Says: `unknown query parameter "a"`},
		{In: "file:///x#frag", Says: "fragment"},
		{In: "file:///x%zz", Says: "invalid URL escape"},
		{In: "file://user:s3cr3t@localhost/x", Says: "credentials do not belong in the URL"},
		{In: "./a\x00b", Says: "NUL"},
	})
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
