//go:build integration

package verify_test

import (
	"bytes"
	"fmt"
	"lifeboat/internal/testbed"
	"math/rand/v2"
	"sort"
	"testing"

	"lifeboat/internal/faultproxy"
	"lifeboat/providers"
	"lifeboat/providers/checksum"
	"lifeboat/verify"
)

// Property: whatever random corruption hits a random subset of a replica's files, neither quick
// nor deep verification ever says OK for a file whose bytes differ from the manifest; deep
// verification flags every such file and no other; quick verification never raises a false alarm.
// Corruptions go through the stores' normal write paths, so native checksums describe the
// bytes actually stored — except "forged" objects (GCS only), planted with the manifest's
// checksums over other bytes, which only deep verification can catch.
func TestPropertyNeverOKForDifferentBytes(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "small")
	type run struct {
		b     *testbed.Backend
		iters int
	}
	runs := []run{{testbed.FileBackend(t), 20}, {testbed.GCSBackend(t), 20}, {testbed.S3Backend(t), 10}, {testbed.AzureBackend(t), 5}}
	for _, rn := range runs {
		t.Run(rn.b.Name, func(t *testing.T) {
			t.Parallel()
			for i := range rn.iters {
				seed := uint64(i)*1000003 + uint64(len(rn.b.Name))
				propertyOnce(t, rn.b, f, seed)
				if t.Failed() {
					t.Fatalf("failed with seed %d", seed)
				}
			}
		})
	}
}

func propertyOnce(t *testing.T, b *testbed.Backend, f *testbed.Fixture, seedN uint64) {
	rng := rand.New(rand.NewPCG(seedN, seedN^0x9e3779b97f4a7c15))
	prefix := testbed.FreshPrefix("prop")
	s := b.Open(t, prefix, nil)
	var forgeries []func([]byte) []byte // GCS: listings that report the manifest's checksums over other bytes
	if b.GCS != nil {
		in := faultproxy.New(&faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpList), Action: faultproxy.Body(func(body []byte) []byte {
			for _, fn := range forgeries {
				body = fn(body)
			}
			return body
		})})
		s = b.Open(t, prefix, in.Client())
	}
	original := map[string][]byte{}
	paths := make([]string, 0, len(f.M.Files))
	for _, file := range f.M.Files {
		original[file.Path] = f.Data(t, file.Path)
		paths = append(paths, file.Path)
	}
	testbed.Seed(t, s, f)
	current := map[string][]byte{} // nil: deleted
	for p, d := range original {
		current[p] = d
	}
	forged := map[string]bool{}
	kinds := []string{"flip", "truncate", "append", "delete", "other-file", "random-same-size", "swap", "rewrite-same", "empty"}
	if b.GCS != nil {
		kinds = append(kinds, "forged")
	}
	n := 1 + rng.IntN(5)
	var log []string
	for range n {
		p := paths[rng.IntN(len(paths))]
		kind := kinds[rng.IntN(len(kinds))]
		cur := current[p]
		if cur == nil && kind != "delete" {
			cur = original[p] // bring it back first, then corrupt
		}
		log = append(log, fmt.Sprintf("%s %s", kind, p))
		var next []byte
		switch kind {
		case "flip":
			next = bytes.Clone(cur)
			if len(next) == 0 {
				next = []byte{1}
			} else {
				next[rng.IntN(len(next))] ^= 1 << rng.IntN(8)
			}
		case "truncate":
			next = bytes.Clone(cur[:rng.IntN(len(cur)+1)])
		case "append":
			next = append(bytes.Clone(cur), byte(rng.IntN(256)))
		case "delete":
			if current[p] != nil {
				testbed.Del(t, s, p)
				current[p] = nil
			}
			continue
		case "other-file":
			next = original[paths[rng.IntN(len(paths))]]
		case "random-same-size":
			next = make([]byte, len(cur))
			for i := range next {
				next[i] = byte(rng.IntN(256))
			}
		case "swap":
			q := paths[rng.IntN(len(paths))]
			other := current[q]
			if other == nil {
				other = original[q]
			}
			testbed.Put(t, s, q, cur, providers.Checksums{})
			current[q] = cur
			delete(forged, q)
			next = other
		case "rewrite-same":
			next = cur
		case "empty":
			next = []byte{}
		case "forged":
			// Other bytes of the same size, planted with the manifest's checksums.
			next = bytes.Clone(cur)
			next[rng.IntN(len(next))] ^= 0x80
			file, _ := f.M.File(p)
			testbed.Put(t, s, p, next, providers.Checksums{})
			forgeries = append(forgeries, forgeListing(next, file.Sums.CRC32C, file.Sums.MD5))
			current[p] = next
			forged[p] = !bytes.Equal(next, original[p])
			continue
		}
		testbed.Put(t, s, p, next, providers.Checksums{})
		current[p] = next
		delete(forged, p)
	}
	sort.Strings(log)

	o := testbed.VerifyOptions()
	o.RangeSize = 64 << 10 // the shards are read in ranges too
	if rng.IntN(2) == 0 {
		o.Digest = checksum.SHA256 // deep proves by SHA-256 instead of the manifest's BLAKE3
	}
	q := verify.Quick(testbed.Ctx(t), f.M, s, o)
	d := verify.Deep(testbed.Ctx(t), f.M, s, o)
	qs, ds := testbed.ByPath(q), testbed.ByPath(d)
	anyDiff := false
	for _, p := range paths {
		differs := current[p] == nil || !bytes.Equal(current[p], original[p])
		anyDiff = anyDiff || differs
		qf, df := qs[p], ds[p]
		switch {
		case differs && df.Status == verify.StatusOK:
			t.Errorf("seed %d %v: deep says OK for changed %s (%s)", seedN, log, p, df.Detail)
		case differs && qf.Status == verify.StatusOK && !forged[p]:
			t.Errorf("seed %d %v: quick says OK for changed %s (%s)", seedN, log, p, qf.Detail)
		case differs && !df.Status.Failed():
			t.Errorf("seed %d %v: deep says %s for changed %s", seedN, log, df.Status, p)
		case !differs && df.Status != verify.StatusOK:
			t.Errorf("seed %d %v: deep says %s for intact %s (%s)", seedN, log, df.Status, p, df.Detail)
		case !differs && qf.Status != verify.StatusOK && qf.Status != verify.StatusUnverified:
			t.Errorf("seed %d %v: quick says %s for intact %s (%s)", seedN, log, qf.Status, p, qf.Detail)
		case current[p] == nil && (qf.Status != verify.StatusMissing || df.Status != verify.StatusMissing):
			t.Errorf("seed %d %v: deleted %s is %s/%s, want MISSING", seedN, log, p, qf.Status, df.Status)
		}
	}
	if anyDiff != (d.Status == verify.ReplicaFailed) {
		t.Errorf("seed %d %v: deep replica %s, files changed: %v", seedN, log, d.Status, anyDiff)
	}
}
