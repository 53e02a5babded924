package azure

import (
	"regexp"
	"strings"
	"testing"
)

// The hand-written account name check accepts exactly what the regular expression it replaces
// accepts.
func FuzzAccountName(f *testing.F) {
	re := regexp.MustCompile(`^[a-z0-9]{3,24}$`)
	for _, s := range []string{"", "a", "ab", "abc", "a.b", "Abc", "abC", "a b", "abc\n", "ébc",
		strings.Repeat("a", 24), strings.Repeat("a", 25), "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := accountName(s), re.MatchString(s); got != want {
			t.Errorf("Azure account %q: %v, the regular expression says %v", s, got, want)
		}
	})
}
