package s3

import (
	"regexp"
	"strings"
	"testing"
)

// The hand-written bucket name check accepts exactly what the regular expression it replaces
// accepts.
func FuzzBucketName(f *testing.F) {
	re := regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$`)
	for _, s := range []string{"", "a", "ab", "abc", "a.b", "a_b-c", "-ab", "ab-", "ab.", "Abc", "abC", "a b", "a\nb", "abc\n",
		"a/b", "a:b", "ébc", "abé", strings.Repeat("a", 63), strings.Repeat("a", 64), "a" + strings.Repeat(".", 61) + "b", "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := bucketName(s), re.MatchString(s); got != want {
			t.Errorf("S3 bucket %q: %v, the regular expression says %v", s, got, want)
		}
	})
}
