//go:build integration

package manifest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/fsouza/fake-gcs-server/fakestorage"

	"lifeboat/internal/emulators"
	"lifeboat/internal/faultproxy"
	"lifeboat/internal/sample"
	"lifeboat/manifest"
	"lifeboat/manifest/lint"
	"lifeboat/providers"
)

// The model repository and DR bundles can live in any store: a build from a store URL gives the
// same manifest bytes as a build from a local copy, and a lint through a store the same findings,
// on every provider (real servers on loopback).

const ssBucket = "lifeboat-manifest"

// ssProvider opens a prefix of one provider; hc, if set, carries its requests.
type ssProvider struct {
	name string
	open func(t *testing.T, prefix string, hc *http.Client) providers.Store
}

// fresh opens a new, empty prefix.
func (p ssProvider) fresh(t *testing.T) (string, providers.Store) {
	prefix := ssPrefix()
	return prefix, p.open(t, prefix, nil)
}

func ssOptions(hc *http.Client) providers.Options {
	return providers.Options{PartSize: 5 << 20, PageSize: 7, HTTPClient: hc,
		Retry: providers.RetryOptions{MaxAttempts: 3, InitialBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}}
}

var ssSeq struct {
	sync.Mutex
	n int
}

func ssPrefix() string {
	ssSeq.Lock()
	defer ssSeq.Unlock()
	ssSeq.n++
	return fmt.Sprintf("p%03d", ssSeq.n)
}

func ssOpen(t *testing.T, raw string, o providers.Options) providers.Store {
	t.Helper()
	s, err := providers.Open(context.Background(), raw, o)
	if err != nil {
		t.Fatalf("open %s: %v", raw, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ssProviders starts a private versitygw and Azurite for the calling test (stopped when it ends)
// and uses the in-process fake-gcs-server. A provider whose emulator is not installed skips (or,
// with LIFEBOAT_REQUIRE_EMULATORS=1, fails) only its own subtests.
func ssProviders(t *testing.T) []ssProvider {
	root := t.TempDir()
	out := []ssProvider{{name: "file", open: func(t *testing.T, prefix string, hc *http.Client) providers.Store {
		dir := filepath.Join(root, prefix)
		os.MkdirAll(dir, 0o755)
		return ssOpen(t, "file://"+dir, ssOptions(hc))
	}}}

	gw, s3err := emulators.StartVersityGW(t.TempDir())
	if s3err == nil {
		t.Cleanup(gw.Stop)
		if err := gw.Bucket(context.Background(), ssBucket); err != nil {
			t.Fatal(err)
		}
	}
	out = append(out, ssProvider{name: "s3", open: func(t *testing.T, prefix string, hc *http.Client) providers.Store {
		if s3err != nil {
			emulators.Unavailable(t, s3err)
		}
		o := ssOptions(hc)
		o.S3Credentials = credentials.NewStaticCredentialsProvider(gw.AccessKey, gw.SecretKey, "")
		return ssOpen(t, gw.URL(ssBucket, prefix), o)
	}})

	g := emulators.SharedFakeGCS(t)
	g.Bucket(ssBucket)
	out = append(out, ssProvider{name: "gcs", open: func(t *testing.T, prefix string, hc *http.Client) providers.Store {
		return ssOpen(t, "gs://"+ssBucket+"/"+prefix, ssOptions(hc))
	}})

	az, azErr := emulators.StartAzurite(t.TempDir())
	if azErr == nil {
		t.Cleanup(az.Stop)
		if err := az.Container(context.Background(), ssBucket); err != nil {
			t.Fatal(err)
		}
	}
	out = append(out, ssProvider{name: "azure", open: func(t *testing.T, prefix string, hc *http.Client) providers.Store {
		if azErr != nil {
			emulators.Unavailable(t, azErr)
		}
		o := ssOptions(hc)
		o.AzureConnectionString = az.ConnectionString(az.Key)
		return ssOpen(t, az.URL(ssBucket, prefix), o)
	}})
	return out
}

// ssUpload copies every file under dir into s, keys relative to dir (prefix prepended).
func ssUpload(t *testing.T, s providers.Store, dir, prefix string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = s.Write(context.Background(), prefix+filepath.ToSlash(rel), bytes.NewReader(data), providers.WriteOptions{Size: int64(len(data))})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ssBreak damages a sample repository the way real copies break, in ways the lint sees: a lost
// tokenizer, a truncated shard (its safetensors header no longer fits), a stray file.
func ssBreak(t *testing.T, l *sample.Layout) {
	t.Helper()
	if err := os.Remove(filepath.Join(l.ModelDir, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(l.ModelDir, l.Shards[1])
	st, _ := os.Stat(shard)
	if err := os.Truncate(shard, st.Size()-4096); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.ModelDir, "notes.txt"), []byte("scratch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// countingStore counts the content bytes read per key.
type countingStore struct {
	providers.Store
	mu   sync.Mutex
	read map[string]int64
}

func (c *countingStore) Read(ctx context.Context, key string, o providers.ReadOptions, fn func(io.Reader) error) error {
	return c.Store.Read(ctx, key, o, func(r io.Reader) error {
		return fn(readCounter{r, func(n int) {
			c.mu.Lock()
			c.read[key] += int64(n)
			c.mu.Unlock()
		}})
	})
}

type readCounter struct {
	r   io.Reader
	add func(int)
}

func (r readCounter) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.add(n)
	return n, err
}

func TestStoreSources(t *testing.T) {
	l := genSample(t, sample.Options{})
	// A .git directory at the model root is tool metadata: skipped by both walkers.
	os.MkdirAll(filepath.Join(l.ModelDir, ".git"), 0o755)
	os.WriteFile(filepath.Join(l.ModelDir, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	opts := manifest.BuildOptions{ModelDir: l.ModelDir, EngineFile: l.EngineFile, DeployPaths: []string{l.DeployDir}, Name: "store"}
	local, err := manifest.Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := local.Marshal()

	broken := genSample(t, sample.Options{})
	ssBreak(t, broken)
	localLint := lint.Run(context.Background(), local, lint.DirSource{Model: broken.ModelDir}, nil)
	bundleLint := lint.Run(context.Background(), local, lint.DirSource{Bundle: broken.Root}, nil)
	if localLint.Errors == 0 || localLint.Warnings == 0 {
		t.Fatalf("the broken sample should fail the lint: %+v", localLint)
	}

	for _, p := range ssProviders(t) {
		t.Run(p.name, func(t *testing.T) {
			t.Run("build", func(t *testing.T) {
				_, s := p.fresh(t)
				ssUpload(t, s, l.ModelDir, "")
				var progressed atomic.Int64 // Progress is called from several goroutines
				var total int64
				o := opts
				o.ModelDir, o.ModelStore = "", s
				o.Progress = func(n int64) { progressed.Add(n) }
				o.Total = func(_, n int64) { total = n }
				o.Jobs = 3
				m, err := manifest.Build(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := m.Marshal()
				if !bytes.Equal(got, want) {
					t.Fatalf("manifest built from %s differs from the local build", s)
				}
				if progressed.Load() != total || total != m.Summarize().Bytes {
					t.Errorf("progress %d of %d; manifest bytes %d", progressed.Load(), total, m.Summarize().Bytes)
				}
			})

			t.Run("lint-model", func(t *testing.T) {
				_, plain := p.fresh(t)
				s := &countingStore{Store: plain, read: map[string]int64{}}
				ssUpload(t, s, broken.ModelDir, "")
				src := manifest.NewStoreSource(s, manifest.ModelRepoLayout)
				rep := lint.Run(context.Background(), local, src, nil)
				if !reflect.DeepEqual(rep, localLint) {
					t.Fatalf("lint through %s:\n%+v\nlocal:\n%+v", s, rep.Findings, localLint.Findings)
				}
				// Safetensors shards are read by their headers only, never downloaded.
				for _, sh := range broken.Shards {
					f, _ := local.File("model/" + sh)
					if n := s.read[sh]; n == 0 || n > 64<<10 || n >= f.Size {
						t.Errorf("lint read %d bytes of %s (%d bytes): want only its header", n, sh, f.Size)
					}
				}
			})

			t.Run("lint-bundle", func(t *testing.T) {
				_, s := p.fresh(t)
				ssUpload(t, s, broken.Root, "")
				s.Write(context.Background(), "manifest.json", strings.NewReader("{}"), providers.WriteOptions{}) // beside the bundle: ignored
				rep := lint.Run(context.Background(), local, manifest.NewStoreSource(s, manifest.BundleLayout), nil)
				if !reflect.DeepEqual(rep, bundleLint) {
					t.Fatalf("lint of the replica %s:\n%+v\nlocal bundle:\n%+v", s, rep.Findings, bundleLint.Findings)
				}
			})

			if p.name == "file" {
				return
			}
			t.Run("broken-reads", func(t *testing.T) {
				prefix, s := p.fresh(t)
				ssUpload(t, s, l.ModelDir, "")
				u := s.String()
				// A body that ends early, cleanly, on every read: the build fails, never hashes
				// the short content as if it were the file.
				in := faultproxy.New(&faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpRead), Action: faultproxy.Shorten(100)})
				o := opts
				o.ModelDir, o.ModelStore = "", p.open(t, prefix, in.Client())
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if m, err := manifest.Build(ctx, o); err == nil {
					data, _ := m.Marshal()
					t.Fatalf("build through truncated reads of %s succeeded:\n%s", u, data)
				}
				// One reset per object is ridden out: the same bytes as the local build.
				in = faultproxy.New(&faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpRead), Times: 3, Action: faultproxy.Reset(100)})
				o.ModelStore = p.open(t, prefix, in.Client())
				m, err := manifest.Build(context.Background(), o)
				if err != nil {
					t.Fatalf("build through %d reset(s): %v", in.Counts()[faultproxy.OpRead], err)
				}
				if got, _ := m.Marshal(); !bytes.Equal(got, want) {
					t.Fatal("manifest built through resets differs from the local build")
				}
			})
		})
	}

	t.Run("unsafe-keys", func(t *testing.T) {
		g := emulators.SharedFakeGCS(t)
		prefix := ssPrefix()
		s := ssOpen(t, "gs://"+ssBucket+"/"+prefix, ssOptions(nil))
		ssUpload(t, s, l.ModelDir, "")
		g.Server.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: ssBucket, Name: prefix + "/loras/../../etc/passwd"}, Content: []byte("x")})
		o := opts
		o.ModelDir, o.ModelStore = "", s
		_, err := manifest.Build(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), "etc/passwd") || !errors.Is(err, providers.ErrInvalidKey) && !strings.Contains(err.Error(), "not safe") {
			t.Fatalf("a hostile object name was not refused by name: %v", err)
		}
	})
}
