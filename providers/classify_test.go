//go:build integration

package providers_test

import (
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"

	"lifeboat/providers"
)

// brokenSource yields some bytes, then fails as a source store's body does when its connection
// is reset mid-copy.
type brokenSource struct{ n int }

func (b *brokenSource) Read(p []byte) (int, error) {
	if b.n > 0 {
		k := min(len(p), b.n)
		b.n -= k
		return k, nil
	}
	return 0, syscall.ECONNRESET
}

// A Write whose content reader broke on the network is unreachable to the one classification
// (the replicator's retry and its UNREACHABLE verdict rest on it), yet the target's error does
// not blame the target: no endpoint, no hint for it.
func TestKindOfWriteWithBrokenSource(t *testing.T) {
	t.Parallel()
	s := open(t, "file://"+t.TempDir(), providers.Options{})
	_, err := s.Write(t.Context(), "model/a.bin", &brokenSource{n: 100}, providers.WriteOptions{Size: 1000})
	if err == nil {
		t.Fatal("write succeeded")
	}
	if k := providers.KindOf(err); k != providers.KindUnreachable {
		t.Errorf("KindOf = %q, want unreachable (%v)", k, err)
	}
	if !providers.Retryable(t.Context(), err) {
		t.Errorf("not retryable: %v", err)
	}
	if strings.Contains(err.Error(), "hint:") {
		t.Errorf("a hint for the target on a source failure: %v", err)
	}
	// What the content reader does not say is a network failure stays unclassified.
	_, err = s.Write(t.Context(), "model/b.bin", io.MultiReader(strings.NewReader("x"), errReader{errors.New("disk on fire")}), providers.WriteOptions{})
	if k := providers.KindOf(err); k != providers.KindOther {
		t.Errorf("KindOf = %q, want other (%v)", k, err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
