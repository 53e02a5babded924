//go:build integration

package providers_test

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"lifeboat/providers"
)

// exercise runs calls that fail in every way a store can and returns what a user could ever see:
// the store's renderings and every error text.
func exercise(t *testing.T, s providers.Store) string {
	ctx := t.Context()
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%v|%+v|%#v|", s.String(), s, s, s)
	_, err := s.Stat(ctx, "missing/key")
	fmt.Fprintf(&b, "%v|%+v|", err, err)
	err = s.List(ctx, "", func(providers.Object) error { return nil })
	fmt.Fprintf(&b, "%v|", err)
	_, err = s.Write(ctx, "k", strings.NewReader("x"), providers.WriteOptions{IfMatch: `"nope"`})
	fmt.Fprintf(&b, "%v|", err)
	err = s.Read(ctx, "missing/key", providers.ReadOptions{}, func(io.Reader) error { return nil })
	fmt.Fprintf(&b, "%v|", err)
	return b.String()
}

func TestSecretsNeverShown(t *testing.T) {
	t.Parallel()
	t.Run("s3", func(t *testing.T) {
		t.Parallel()
		gw := sharedS3(t)
		wrong := "WRONG" + gw.SecretKey[5:]
		seen := exercise(t, open(t, gw.URL(testBucket, freshPrefix()), s3Options(gw, gw.SecretKey)))
		seen += exercise(t, open(t, gw.URL(testBucket, freshPrefix()), s3Options(gw, wrong)))
		for _, secret := range []string{gw.SecretKey, wrong} {
			if strings.Contains(seen, secret) {
				t.Fatalf("secret shown in:\n%s", seen)
			}
		}
		if !strings.Contains(seen, "permission denied") || !strings.Contains(seen, "not found") {
			t.Fatalf("expected both a not-found and a permission error in:\n%s", seen)
		}
	})
	t.Run("az", func(t *testing.T) {
		t.Parallel()
		a := sharedAzure(t)
		seen := exercise(t, open(t, azURL(testBucket, freshPrefix()), azOptions(a, a.Key)))
		seen += exercise(t, open(t, azURL(testBucket, freshPrefix()), azOptions(a, wrongAzureKey)))
		for _, secret := range []string{a.Key, wrongAzureKey, "AccountKey"} {
			if strings.Contains(seen, secret) {
				t.Fatalf("secret %q shown in:\n%s", secret, seen)
			}
		}
		if !strings.Contains(seen, "permission denied") || !strings.Contains(seen, "not found") {
			t.Fatalf("expected both a not-found and a permission error in:\n%s", seen)
		}
	})
	t.Run("az-bad-connection-string", func(t *testing.T) {
		t.Parallel()
		cs := "AccountName=devstoreaccount1;AccountKey=not-base64-s3cr3t!!;BlobEndpoint=::bad"
		_, err := providers.Open(t.Context(), "az://devstoreaccount1/cont/x", providers.Options{AzureConnectionString: cs})
		if err == nil {
			t.Skip("the SDK accepted the string")
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Fatalf("secret shown: %v", err)
		}
	})
	t.Run("az-account-mismatch", func(t *testing.T) {
		t.Parallel()
		cs := "AccountName=otheraccount;AccountKey=" + wrongAzureKey
		_, err := providers.Open(t.Context(), "az://devstoreaccount1/cont/x", providers.Options{AzureConnectionString: cs})
		if err == nil || !strings.Contains(err.Error(), "otheraccount") || strings.Contains(err.Error(), wrongAzureKey) {
			t.Fatalf("mismatched account: %v", err)
		}
	})
}
