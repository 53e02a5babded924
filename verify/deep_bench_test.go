//go:build integration

package verify_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"lifeboat/internal/testbed"
	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/verify"
)

// BenchmarkDeep deep-verifies, with the default options, the replica at $LIFEBOAT_BENCH_URL (a
// directory or any store URL) against the manifest $LIFEBOAT_BENCH_MANIFEST — for example a
// bundle made with `lifeboat demo init DIR --size 1GiB` and `lifeboat manifest build`. Skipped
// when unset. Compare its MB/s with `sha256sum` over the same files.
func BenchmarkDeep(b *testing.B) {
	url, mf := os.Getenv("LIFEBOAT_BENCH_URL"), os.Getenv("LIFEBOAT_BENCH_MANIFEST")
	if url == "" || mf == "" {
		b.Skip("set LIFEBOAT_BENCH_URL and LIFEBOAT_BENCH_MANIFEST")
	}
	m, err := manifest.ReadFile(filepath.Clean(mf))
	if err != nil {
		b.Fatal(err)
	}
	s, err := providers.Open(context.Background(), url, providers.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var total int64
	for _, f := range m.Files {
		total += f.Size
	}
	b.SetBytes(total)
	for b.Loop() {
		if r := verify.Deep(context.Background(), m, s, verify.Options{}); r.Status != verify.ReplicaOK {
			b.Fatal(testbed.Dump(r))
		}
	}
}
