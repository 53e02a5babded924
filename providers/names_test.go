package providers_test

import (
	"regexp"
	"strings"
	"testing"

	"lifeboat/providers"
)

// The hand-written bucket and account name checks accept exactly what the regular expressions
// they replace accept.
func FuzzNames(f *testing.F) {
	s3 := regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$`)
	gcs := regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$`)
	az := regexp.MustCompile(`^[a-z0-9]{3,24}$`)
	for _, s := range []string{"", "a", "ab", "abc", "a.b", "a_b-c", "-ab", "ab-", "ab.", "Abc", "abC", "a b", "a\nb", "abc\n",
		"a/b", "a:b", "ébc", "abé", strings.Repeat("a", 24), strings.Repeat("a", 25), strings.Repeat("a", 63), strings.Repeat("a", 64),
		strings.Repeat("a", 222), strings.Repeat("a", 223), "a" + strings.Repeat(".", 61) + "b", "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := providers.BucketName(s, 63), s3.MatchString(s); got != want {
			t.Errorf("S3 bucket %q: %v, the regular expression says %v", s, got, want)
		}
		if got, want := providers.BucketName(s, 222), gcs.MatchString(s); got != want {
			t.Errorf("GCS bucket %q: %v, the regular expression says %v", s, got, want)
		}
		if got, want := providers.AzAccountName(s), az.MatchString(s); got != want {
			t.Errorf("Azure account %q: %v, the regular expression says %v", s, got, want)
		}
	})
}
