package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// SecretEnvName's fast path says what secretEnvRE says, for names built from pieces of its words
// in random case, separators, and non-ASCII letters (whose case folding only the regexp knows).
func TestSecretEnvNameMatchesItsRegexp(t *testing.T) {
	pieces := []string{"SECRET", "secr", "et", "Pass", "word", "PASSWD", "tok", "en", "_KEY", "key", "_", "ACCESS", "API",
		"CONNECTION_STRING", "connection", "sas", "SA", "S", "credential", "CRED", "HF", "AWS", "ſ", "K", "é", "x", "1", "-"}
	rng := rand.New(rand.NewPCG(7, 32))
	for i := range 20000 {
		var b strings.Builder
		for range rng.IntN(6) + 1 {
			p := pieces[rng.IntN(len(pieces))]
			if rng.IntN(2) == 0 {
				p = strings.ToLower(p)
			}
			b.WriteString(p)
		}
		if i%97 == 0 { // longer than the fast path's stack buffer
			b.WriteString(strings.Repeat("A", 130))
		}
		name := b.String()
		if got, want := SecretEnvName(name), secretEnvRE.MatchString(name); got != want {
			t.Fatalf("SecretEnvName(%q) = %v, its regexp says %v", name, got, want)
		}
	}
	for _, name := range []string{"HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "MY_KEY", "KEYRING", "PATH", "AZURE_STORAGE_SAS", "ſecret", "MY_KEY"} {
		if got, want := SecretEnvName(name), secretEnvRE.MatchString(name); got != want {
			t.Fatalf("SecretEnvName(%q) = %v, its regexp says %v", name, got, want)
		}
	}
}
