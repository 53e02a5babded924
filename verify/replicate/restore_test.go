//go:build integration

package replicate_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"lifeboat/internal/testbed"
	"lifeboat/verify/replicate"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/verify"
)

// restoreFrom restores the small fixture from each kind of replica into a fresh directory: the
// first run copies every file, a second copies nothing (every file re-read intact), a partial
// restore resumes, a tampered local file is fetched again, and the bundle layout is right.
func TestRestoreFromReplicas(t *testing.T) {
	f := testbed.Sample(t, "small")
	for _, b := range []*testbed.Backend{testbed.FileBackend(t), testbed.S3Backend(t), testbed.GCSBackend(t)} {
		t.Run(b.Name, func(t *testing.T) {
			src := b.Open(t, testbed.FreshPrefix("restore-src"), nil)
			testbed.Seed(t, src, f)
			dir := filepath.Join(t.TempDir(), "restored")
			ctx := testbed.Ctx(t)

			rep, err := replicate.Restore(ctx, f.M, src, dir, replicate.Options{Jobs: 3})
			if err != nil || rep.Status != replicate.OK || rep.Copied != len(f.M.Files) || rep.Failed != 0 {
				t.Fatalf("first restore: %v %+v", err, rep)
			}
			for _, file := range f.M.Files {
				got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(file.Path)))
				if err != nil || !bytes.Equal(got, f.Data(t, file.Path)) {
					t.Fatalf("%s differs after restore (%v)", file.Path, err)
				}
			}
			l := rep.Layout
			if l == nil || l.ModelDir != filepath.Join(dir, "model") || l.DeployDir != filepath.Join(dir, "deploy") ||
				!strings.HasPrefix(l.EngineConfig, filepath.Join(dir, "engine")+string(filepath.Separator)) {
				t.Fatalf("layout %+v", l)
			}
			if _, err := os.Stat(l.EngineConfig); err != nil {
				t.Fatal(err)
			}

			// Nothing to do: every present file is proven by a SHA-256 re-read, none copied.
			rep, err = replicate.Restore(ctx, f.M, src, dir, replicate.Options{})
			if err != nil || rep.Status != replicate.OK || rep.Copied != 0 || rep.RereadOK != len(f.M.Files) {
				t.Fatalf("second restore: %v %+v", err, rep)
			}

			// Partial: two files gone (one of them left as a stray temporary of an interrupted
			// write), one shard tampered in place with the same size.
			shard := f.Shards()[0]
			os.Remove(filepath.Join(dir, "model", "tokenizer.json"))
			os.Remove(filepath.Join(dir, filepath.FromSlash(shard)))
			os.WriteFile(filepath.Join(dir, "model", ".lifeboat-tmp-123"), []byte("half"), 0o644)
			cfgPath := filepath.Join(dir, "model", "config.json")
			data, _ := os.ReadFile(cfgPath)
			data[len(data)/2] ^= 0x20
			os.WriteFile(cfgPath, data, 0o644)

			// Each copy is reported done only once committed: under its own name, with its bytes.
			var done []string
			rep, err = replicate.Restore(ctx, f.M, src, dir, replicate.Options{OnFile: func(c replicate.CopyResult) {
				done = append(done, c.Path)
				if got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(c.Path))); c.Outcome == replicate.OutcomeCopied && (err != nil || !bytes.Equal(got, f.Data(t, c.Path))) {
					t.Errorf("%s reported %s before it was in place (%v)", c.Path, c.Outcome, err)
				}
			}})
			if err != nil || rep.Status != replicate.OK || rep.Copied != 3 || rep.RereadOK != len(f.M.Files)-3 {
				t.Fatalf("resume: %v %+v", err, rep)
			}
			reasons := map[string]verify.Status{}
			for _, c := range rep.Files {
				reasons[c.Path] = c.Reason
			}
			if reasons["model/tokenizer.json"] != verify.StatusMissing || reasons[shard] != verify.StatusMissing || reasons["model/config.json"] != verify.StatusCorrupt {
				t.Fatalf("resume plan %v (done %v)", reasons, done)
			}
			if got, _ := os.ReadFile(cfgPath); !bytes.Equal(got, f.Data(t, "model/config.json")) {
				t.Fatal("tampered config.json was not fetched again")
			}
		})
	}
}

// A source whose bytes do not match the manifest writes nothing under the file's name.
func TestRestoreCorruptSourceWritesNothing(t *testing.T) {
	f := testbed.Sample(t, "small")
	b := testbed.FileBackend(t)
	src := b.Open(t, testbed.FreshPrefix("restore-bad"), nil)
	testbed.Seed(t, src, f)
	shard := f.Shards()[0]
	data := f.Data(t, shard)
	bad := append([]byte{}, data...)
	bad[len(bad)/3] ^= 1
	testbed.Put(t, src, shard, bad, providers.Checksums{})

	dir := t.TempDir()
	rep, err := replicate.Restore(testbed.Ctx(t), f.M, src, dir, replicate.Options{})
	if err != nil || rep.Status != replicate.Failed || rep.Failed != 1 || rep.Layout != nil {
		t.Fatalf("%v %+v", err, rep)
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(shard))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("corrupt shard written under its name: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "model"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".lifeboat-tmp-") {
			t.Fatalf("temporary left behind: %s", e.Name())
		}
	}
}

func TestRestorePathGuard(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "model")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "engine", "real"), 0o755)
	if err := os.Symlink(filepath.Join(dir, "engine", "real"), filepath.Join(dir, "engine", "inside")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling"))
	for _, bad := range []string{"", "/etc/passwd", "../x", "model/../../x", "a/../b", "./a", "a//b", "a/", `a\..\b`, "model/config.json", "dangling/x", "C:/x"} {
		if p, err := replicate.RestorePath(dir, bad); err == nil || !errors.Is(err, replicate.ErrOutsideDir) {
			// "C:/x" is a plain relative name on Unix; it must at least stay inside.
			if bad == "C:/x" && err == nil && strings.HasPrefix(p, dir+string(filepath.Separator)) {
				continue
			}
			t.Errorf("RestorePath(%q) = %q, %v; want ErrOutsideDir", bad, p, err)
		}
	}
	for _, good := range []string{"engine/inside/engine.yaml", "deploy/x.yaml", "deploy/..hidden"} {
		if p, err := replicate.RestorePath(dir, good); err != nil || !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Errorf("RestorePath(%q) = %q, %v", good, p, err)
		}
	}
}

// A manifest that names a path outside DIR (no valid manifest can; this one is forged) refuses
// the whole restore before anything is written.
func TestRestoreRefusesPathsOutsideDir(t *testing.T) {
	f := testbed.Sample(t, "small")
	src := testbed.FileBackend(t).Open(t, testbed.FreshPrefix("restore-evil"), nil)
	testbed.Seed(t, src, f)
	base := t.TempDir()
	dir := filepath.Join(base, "restore")
	for _, evil := range []string{"../escaped", "model/../../escaped", "/tmp/escaped"} {
		m := &manifest.Manifest{OCI: f.M.OCI, Model: f.M.Model, Files: append([]manifest.File{}, f.M.Files...)}
		m.Files = append(m.Files, manifest.File{Path: evil, Size: 1, Data: []byte("x"), Role: manifest.RoleOther})
		rep, err := replicate.Restore(testbed.Ctx(t), m, src, dir, replicate.Options{})
		if !errors.Is(err, replicate.ErrOutsideDir) || rep != nil {
			t.Fatalf("%s: %v %+v", evil, err, rep)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused restore created its directory")
	}
	if _, err := os.Stat(filepath.Join(base, "escaped")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("wrote outside the directory")
	}
}

// The model configs the manifest embeds are restored from its copy — the bytes its digest names —
// even when the replica's copy is corrupt; weights still come from the replica.
func TestRestoreWritesEmbeddedModelConfigs(t *testing.T) {
	f := testbed.Sample(t, "small")
	cfg, ok := f.M.File("model/config.json")
	if !ok || cfg.Data == nil {
		t.Fatal("the sample manifest does not embed model/config.json")
	}
	src := testbed.FileBackend(t).Open(t, testbed.FreshPrefix("restore-embedded"), nil)
	testbed.Seed(t, src, f)
	bad := append([]byte{}, cfg.Data...)
	bad[len(bad)/2] ^= 0x20
	testbed.Put(t, src, "model/config.json", bad, providers.Checksums{})

	dir := t.TempDir()
	rep, err := replicate.Restore(testbed.Ctx(t), f.M, src, dir, replicate.Options{})
	if err != nil || rep.Status != replicate.OK || rep.Failed != 0 {
		t.Fatalf("%v %+v", err, rep)
	}
	from := map[string]replicate.CopyFrom{}
	for _, c := range rep.Files {
		from[c.Path] = c.From
	}
	if from["model/config.json"] != replicate.FromManifest || from[f.Shards()[0]] != replicate.FromSource {
		t.Errorf("copied from %v", from)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "model", "config.json"))
	if sum := sha256.Sum256(got); "sha256:"+hex.EncodeToString(sum[:]) != cfg.Digest.String() || !bytes.Equal(got, f.Data(t, "model/config.json")) {
		t.Fatalf("restored config.json is not the manifest's bytes")
	}
}
