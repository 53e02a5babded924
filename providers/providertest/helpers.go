package providertest

import (
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"lifeboat/providers"
)

// Options are store options small enough that listings cross pages and large objects span
// several parts, with quick, bounded retries: what each backend's conformance test opens with.
func Options() providers.Options {
	return providers.Options{
		PageSize: 100, PartSize: 5 << 20, Concurrency: 4,
		Retry: providers.RetryOptions{MaxAttempts: 3, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond},
	}
}

var prefixSeq atomic.Int64

// FreshPrefix is a key prefix no other call in this process returns ("suite/p00001", …).
func FreshPrefix() string { return fmt.Sprintf("suite/p%05d", prefixSeq.Add(1)) }

// Open opens rawURL through the providers factory (its scheme's package must be linked) and
// closes the store when the test ends.
func Open(t *testing.T, rawURL string, opts providers.Options) providers.Store {
	t.Helper()
	s, err := providers.Open(t.Context(), rawURL, opts)
	if err != nil {
		t.Fatalf("open %s: %v", rawURL, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// SubURL is the URL of a store one prefix level below s (its String() is its URL).
func SubURL(t *testing.T, s providers.Store, sub string) string {
	u, err := url.Parse(s.String())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + sub
	return u.String()
}
