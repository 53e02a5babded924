//go:build integration

package verify_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"lifeboat/internal/testbed"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"lifeboat/internal/faultproxy"
	"lifeboat/providers"
	"lifeboat/verify"
)

var (
	anyRequest = faultproxy.Ops(faultproxy.OpList, faultproxy.OpStat, faultproxy.OpRead)
	reads      = faultproxy.Ops(faultproxy.OpRead)
)

// noOKUnlessProven: under faults a file may be OK only if it is also OK on a clean run — and a
// replica whose requests all fail must have no OK file at all.
func noneOK(t *testing.T, r verify.ReplicaResult) {
	t.Helper()
	if n := r.Counts[verify.StatusOK]; n != 0 {
		t.Errorf("%d file(s) OK on a replica that could not be read\n%s", n, testbed.Dump(r))
	}
}

// Faults injected between the SDK and each emulator: transient 503/429 bursts do not fail a
// verify, persistent ones do not pass it; resets and truncations mid-body are retried or
// reported, never accepted; altered checksums are caught.
func TestFaults(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	shard := f.Shards()[0]
	for _, mk := range []func(testing.TB) *testbed.Backend{testbed.S3Backend, testbed.GCSBackend, testbed.AzureBackend} {
		b := mk(t)
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			prefix := testbed.FreshPrefix("faults")
			testbed.Seed(t, b.Open(t, prefix, nil), f)
			// run verifies the clean replica through a fresh injector holding rules.
			runWith := func(t *testing.T, mode verify.Mode, o verify.Options, rules ...*faultproxy.Rule) verify.ReplicaResult {
				t.Helper()
				s := b.Open(t, prefix, faultproxy.New(rules...).Client())
				if mode == verify.ModeDeep {
					return verify.Deep(testbed.Ctx(t), f.M, s, o)
				}
				return verify.Quick(testbed.Ctx(t), f.M, s, o)
			}
			run := func(t *testing.T, mode verify.Mode, rules ...*faultproxy.Rule) verify.ReplicaResult {
				t.Helper()
				return runWith(t, mode, testbed.VerifyOptions(), rules...)
			}
			fired := func(t *testing.T, rules ...*faultproxy.Rule) {
				t.Helper()
				for i, r := range rules {
					if r.Fired() == 0 {
						t.Errorf("rule %d never fired", i)
					}
				}
			}

			t.Run("TransientBursts", func(t *testing.T) {
				for _, mode := range []verify.Mode{verify.ModeQuick, verify.ModeDeep} {
					// The one listing request of a clean replica fails twice in a row, a 503
					// then a 429, and succeeds at the third and last SDK attempt (MaxAttempts 3).
					rules := []*faultproxy.Rule{
						{Match: faultproxy.Ops(faultproxy.OpList), Times: 1, Action: faultproxy.Status(503, "0")},
						{Match: faultproxy.Ops(faultproxy.OpList), Times: 1, Action: faultproxy.Status(429, "0")},
						{Match: reads, Times: 2, Action: faultproxy.Status(503, "0")},
						{Match: reads, Times: 2, Action: faultproxy.Status(429, "0")},
					}
					if mode == verify.ModeQuick {
						rules = rules[:2] // quick verification reads nothing
						if b.Name == "s3" {
							rules = append(rules, &faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpStat), Times: 2, Action: faultproxy.Status(503, "0")})
						}
					}
					r := run(t, mode, rules...)
					if r.Status != verify.ReplicaOK {
						t.Errorf("%s under a burst: %s\n%s", mode, r.Status, testbed.Dump(r))
					}
					fired(t, rules...)
				}
			})

			t.Run("Persistent503", func(t *testing.T) {
				for _, mode := range []verify.Mode{verify.ModeQuick, verify.ModeDeep} {
					r := run(t, mode, &faultproxy.Rule{Match: anyRequest, Action: faultproxy.Status(503, "0")})
					if r.Status != verify.ReplicaUnreachable || r.ErrorKind != verify.ErrorUnreachable || !errors.Is(r.Err, providers.ErrUnreachable) {
						t.Errorf("%s: status %s kind %s err %v, want UNREACHABLE", mode, r.Status, r.ErrorKind, r.Err)
					}
					noneOK(t, r)
					if len(r.Files) != len(f.M.Files) {
						t.Errorf("%s: %d file results, want every manifest file", mode, len(r.Files))
					}
				}
			})

			if b.Name == "s3" {
				t.Run("PersistentStat503", func(t *testing.T) {
					// The listing works, the Stats that would prove the multipart shards do not.
					r := run(t, verify.ModeQuick, &faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpStat), Action: faultproxy.Status(503, "0")})
					if r.Status != verify.ReplicaUnreachable {
						t.Errorf("status %s, want UNREACHABLE\n%s", r.Status, testbed.Dump(r))
					}
					for _, sh := range f.Shards() {
						if st := testbed.ByPath(r)[sh].Status; st != verify.StatusError {
							t.Errorf("%s: %s, want ERROR", sh, st)
						}
					}
				})
			}

			t.Run("MidBodyOnce", func(t *testing.T) {
				// One broken response per fault kind, on the big shard (ranged reads) and on a
				// small file (one whole-object read): retried, then OK.
				for _, act := range []faultproxy.Action{faultproxy.Reset(100 << 10), faultproxy.Truncate(200 << 10), faultproxy.Shorten(300 << 10)} {
					rules := []*faultproxy.Rule{
						{Match: faultproxy.All(reads, faultproxy.PathContains(shard)), Times: 1, Action: act},
						{Match: faultproxy.All(reads, faultproxy.PathContains("tokenizer.json")), Times: 1, Action: act},
					}
					r := run(t, verify.ModeDeep, rules...)
					if r.Status != verify.ReplicaOK {
						t.Errorf("deep with one %T: %s\n%s", act, r.Status, testbed.Dump(r))
					}
					fired(t, rules...)
				}
			})

			t.Run("MidBodyPersistent", func(t *testing.T) {
				// Every response for the shard breaks before its first byte (or delivers a clean
				// but short body): no attempt can make progress, so the file is ERROR. (GCS's
				// reader reopens such bodies without limit: only the stall timeout ends it.)
				o := testbed.VerifyOptions()
				o.StallTimeout, o.ReadAttempts = 2*time.Second, 2
				for _, act := range []faultproxy.Action{faultproxy.Reset(0), faultproxy.Truncate(0), faultproxy.Shorten(100 << 10)} {
					r := runWith(t, verify.ModeDeep, o, &faultproxy.Rule{Match: faultproxy.All(reads, faultproxy.PathContains(shard)), Action: act})
					if r.Status != verify.ReplicaUnreachable || r.Error == "" {
						t.Errorf("%#v: replica %s (%q), want UNREACHABLE with an error", act, r.Status, r.Error)
					}
					testbed.ExpectStatuses(t, r, map[string][]verify.Status{shard: {verify.StatusError}}, verify.StatusOK)
				}
				// Breaking every response after 100 kB: GCS's reader and Azure's retry reader
				// resume from the last byte received, so they may well get through (and the
				// hash proves they did); S3 retries the whole range and fails. Never CORRUPT,
				// never OK with other bytes.
				for _, act := range []faultproxy.Action{faultproxy.Reset(100 << 10), faultproxy.Truncate(100 << 10)} {
					r := run(t, verify.ModeDeep, &faultproxy.Rule{Match: faultproxy.All(reads, faultproxy.PathContains(shard)), Action: act})
					fr := testbed.ByPath(r)[shard]
					switch {
					case fr.Status == verify.StatusOK && testbed.ProvenByRead(fr):
					case fr.Status == verify.StatusError && r.Status == verify.ReplicaUnreachable:
					default:
						t.Errorf("%#v: %s is %s (%s), replica %s", act, shard, fr.Status, fr.Detail, r.Status)
					}
				}
			})

			t.Run("AlteredChecksums", func(t *testing.T) {
				var rule *faultproxy.Rule
				target := "model/config.json"
				switch b.Name {
				case "s3":
					// HeadObject says another CRC64NVME for the multipart shards.
					target = shard
					rule = &faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpStat), Action: faultproxy.Header(func(h http.Header) {
						if h.Get("x-amz-checksum-crc64nvme") != "" {
							h.Set("x-amz-checksum-crc64nvme", base64.StdEncoding.EncodeToString([]byte("12345678")))
						}
					})}
				case "gcs":
					rule = &faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpList), Action: faultproxy.Body(alterJSON("crc32c"))}
				case "azure":
					rule = &faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpList), Action: faultproxy.Body(alterXML("Content-MD5"))}
				}
				r := run(t, verify.ModeQuick, rule)
				testbed.ExpectStatuses(t, r, map[string][]verify.Status{target: {verify.StatusChecksumMismatch}})
				if r.Status != verify.ReplicaFailed {
					t.Errorf("status %s, want FAILED", r.Status)
				}
				noneOK := true
				for _, fr := range r.Files {
					noneOK = noneOK && fr.Status != verify.StatusOK
				}
				if b.Name != "s3" && !noneOK {
					t.Errorf("every listed checksum was altered, yet some file is OK\n%s", testbed.Dump(r))
				}
			})

			if b.Name == "s3" {
				t.Run("ListingETagIsNotProof", func(t *testing.T) {
					// A listing ETag that differs from the manifest's MD5 is a mismatch only once
					// a Stat shows the object is not SSE-KMS/SSE-C: here the Stat shows the true
					// ETag, so the files are OK — and if the Stat lies too, they mismatch.
					in := faultproxy.New(&faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpList), Action: faultproxy.Body(alterXML("ETag"))})
					r := verify.Quick(testbed.Ctx(t), f.M, b.Open(t, prefix, in.Client()), testbed.VerifyOptions())
					if r.Status != verify.ReplicaOK {
						t.Errorf("listing ETags altered: %s\n%s", r.Status, testbed.Dump(r))
					}
					if n := in.Counts()[faultproxy.OpStat]; n != len(f.M.Files) {
						t.Errorf("%d stats, want one per file (%d)", n, len(f.M.Files))
					}
					in.Add(&faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpStat), Action: faultproxy.Header(func(h http.Header) {
						h.Set("ETag", `"00112233445566778899aabbccddeeff"`)
					})})
					r = verify.Quick(testbed.Ctx(t), f.M, b.Open(t, prefix, in.Client()), testbed.VerifyOptions())
					testbed.ExpectStatuses(t, r, map[string][]verify.Status{"model/config.json": {verify.StatusChecksumMismatch}})
				})

				t.Run("AlteredChecksumOnRead", func(t *testing.T) {
					// A whole-object GET's x-amz-checksum header disagrees with the bytes. Deep
					// verification hashes every byte itself (ReadOptions.Hashed: the store's CRC
					// check is skipped), so the right bytes are OK by their hash — never OK on the
					// store's word alone — and a read of them for a copy still fails on the header
					// (a replicate from this store is checked by the store as it reads).
					wrong := func() *faultproxy.Rule {
						return &faultproxy.Rule{Match: faultproxy.All(reads, faultproxy.PathContains("config.json")), Action: faultproxy.Header(func(h http.Header) {
							if h.Get("x-amz-checksum-crc64nvme") != "" {
								h.Set("x-amz-checksum-crc64nvme", base64.StdEncoding.EncodeToString([]byte("12345678")))
							}
						})}
					}
					rule := wrong()
					r := run(t, verify.ModeDeep, rule)
					fired(t, rule)
					fr := testbed.ByPath(r)["model/config.json"]
					if fr.Status != verify.StatusOK || !testbed.ProvenByRead(fr) {
						t.Errorf("config.json with a wrong checksum header on every read: %s (%s)", fr.Status, fr.Detail)
					}
					// A read that does not hash the bytes itself keeps the store's check.
					s := b.Open(t, prefix, faultproxy.New(wrong()).Client())
					err := s.Read(testbed.Ctx(t), "model/config.json", providers.ReadOptions{}, func(rd io.Reader) error {
						_, err := io.Copy(io.Discard, rd)
						return err
					})
					if !errors.Is(err, providers.ErrContentMismatch) {
						t.Errorf("a plain read of config.json with a wrong checksum header: %v, want a content mismatch", err)
					}
				})

				t.Run("RotAtRest", func(t *testing.T) {
					// Bytes changed on the server's disk under the object's stored checksums:
					// metadata still says OK (quick cannot know); deep verification reports
					// CORRUPT, not a network problem: read twice, the same wrong bytes, and the
					// store's CRC64NVME is the manifest's.
					rotPrefix := testbed.FreshPrefix("rot")
					testbed.Seed(t, b.Open(t, rotPrefix, nil), f)
					path := filepath.Join(b.S3.Dir, testbed.Bucket, rotPrefix, "model", "config.json")
					data, err := os.ReadFile(path)
					if err != nil {
						t.Skipf("versitygw layout: %v", err)
					}
					data[7] ^= 0x20
					if err := os.WriteFile(path, data, 0o644); err != nil {
						t.Fatal(err)
					}
					s := b.Open(t, rotPrefix, nil)
					if q := testbed.ByPath(verify.Quick(testbed.Ctx(t), f.M, s, testbed.VerifyOptions()))["model/config.json"]; q.Status != verify.StatusOK {
						t.Logf("quick: %s (%s)", q.Status, q.Detail)
					}
					d := verify.Deep(testbed.Ctx(t), f.M, s, testbed.VerifyOptions())
					fr := testbed.ByPath(d)["model/config.json"]
					if fr.Status != verify.StatusCorrupt || !strings.Contains(fr.Detail, "damaged at rest") || d.Status != verify.ReplicaFailed {
						t.Errorf("rot at rest: %s (%s), replica %s", fr.Status, fr.Detail, d.Status)
					}
				})
			}
		})
	}
}

// alterXML replaces every <tag>value</tag> with a different value of the same form.
func alterXML(tag string) func([]byte) []byte {
	re := regexp.MustCompile(`<` + tag + `>([^<]*)</` + tag + `>`)
	return func(b []byte) []byte {
		return re.ReplaceAllFunc(b, func(m []byte) []byte {
			v := re.FindSubmatch(m)[1]
			return []byte("<" + tag + ">" + alter(string(v)) + "</" + tag + ">")
		})
	}
}

// alterJSON replaces every "key": "value" with a different value of the same form.
func alterJSON(key string) func([]byte) []byte {
	re := regexp.MustCompile(`"` + key + `"\s*:\s*"([^"]*)"`)
	return func(b []byte) []byte {
		return re.ReplaceAllFunc(b, func(m []byte) []byte {
			v := re.FindSubmatch(m)[1]
			return []byte(`"` + key + `": "` + alter(string(v)) + `"`)
		})
	}
}

// alter changes one character in the middle of a base64 or hex value (the middle, because the
// last base64 characters may be padding bits, and S3 ETags are wrapped in &quot;).
func alter(v string) string {
	for i := len(v) / 2; i < len(v); i++ {
		switch c := v[i]; {
		case c >= 'a' && c <= 'e', c >= 'g' && c <= 'y', c >= 'A' && c <= 'Y', c >= '0' && c <= '8':
			return v[:i] + string(c+1) + v[i+1:] // hex stays hex: 0-8 and a-e
		case c == 'f', c == 'z', c == 'Z', c == '9':
			return v[:i] + string(c-1) + v[i+1:]
		}
	}
	return v
}

// listLog is a Store that records the dir of every List.
type listLog struct {
	providers.Store
	mu   sync.Mutex
	dirs []string
}

func (l *listLog) List(ctx context.Context, dir string, fn func(providers.Object) error) error {
	l.mu.Lock()
	l.dirs = append(l.dirs, dir)
	l.mu.Unlock()
	return l.Store.List(ctx, dir, fn)
}

// Quick verification lists the bundle's prefix once; objects beside the bundle directories are
// none of its business (not EXTRA). A prefix with more than 1,000 of them (a bundle at a bucket's
// root, next to much else) is not paged through: the bundle directories are listed on their own,
// with the same result.
func TestQuickListsThePrefixOnce(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	b := testbed.FileBackend(t)
	prefix := testbed.FreshPrefix("listonce")
	s := b.Open(t, prefix, nil)
	testbed.Seed(t, s, f)
	testbed.Put(t, s, "model/notes.txt", []byte("not in the manifest\n"), providers.Checksums{})
	testbed.Put(t, s, "lifeboat-manifest.json", []byte("{}"), providers.Checksums{})
	check := func(t *testing.T, wantDirs []string) {
		t.Helper()
		l := &listLog{Store: b.Open(t, prefix, nil)}
		r := verify.Quick(testbed.Ctx(t), f.M, l, testbed.VerifyOptions())
		testbed.ExpectStatuses(t, r, map[string][]verify.Status{"model/notes.txt": {verify.StatusExtra}}, verify.StatusUnverified)
		if n := len(r.Files); n != len(f.M.Files)+1 {
			t.Errorf("%d file results, want the manifest's %d and the one EXTRA", n, len(f.M.Files))
		}
		sort.Strings(l.dirs)
		if !slices.Equal(l.dirs, wantDirs) {
			t.Errorf("listed %q, want %q", l.dirs, wantDirs)
		}
	}
	t.Run("clean", func(t *testing.T) { check(t, []string{""}) })
	t.Run("crowded", func(t *testing.T) {
		for i := range 1001 {
			testbed.Put(t, s, fmt.Sprintf("other/%04d", i), []byte("x"), providers.Checksums{})
		}
		check(t, []string{"", "deploy", "engine", "model"})
	})
}

// A listing has one retry layer, the SDK's (3 attempts here): a burst within it leaves the replica
// OK after exactly burst+1 listing requests; a burst that outlasts it leaves the replica
// UNREACHABLE with no file OK after exactly 3 requests — not 3 × ReadAttempts, which is what two
// layers retrying the same failure would cost an on-call engineer waiting for the verdict.
func TestListingRetriedByOneLayer(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	b := testbed.S3Backend(t)
	prefix := testbed.FreshPrefix("listburst")
	testbed.Seed(t, b.Open(t, prefix, nil), f)
	for _, burst := range []int{1, 2} {
		rule := &faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpList), Times: burst, Action: faultproxy.Status(503, "0")}
		in := faultproxy.New(rule)
		r := verify.Quick(testbed.Ctx(t), f.M, b.Open(t, prefix, in.Client()), testbed.VerifyOptions())
		if r.Status != verify.ReplicaOK || rule.Fired() != burst || in.Counts()[faultproxy.OpList] != burst+1 {
			t.Errorf("%d failed listing attempts (%d fired, %d listings): %s", burst, rule.Fired(), in.Counts()[faultproxy.OpList], testbed.Dump(r))
		}
	}
	rule := &faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpList), Times: 100, Action: faultproxy.Status(503, "0")}
	in := faultproxy.New(rule)
	r := verify.Quick(testbed.Ctx(t), f.M, b.Open(t, prefix, in.Client()), testbed.VerifyOptions())
	if r.Status != verify.ReplicaUnreachable || r.ErrorKind != verify.ErrorUnreachable {
		t.Errorf("a listing failing on every attempt: %s", testbed.Dump(r))
	}
	if n := in.Counts()[faultproxy.OpList]; n != 3 {
		t.Errorf("a listing failing on every attempt was requested %d times, want the SDK's 3 (one retry layer)", n)
	}
	noneOK(t, r)
}
