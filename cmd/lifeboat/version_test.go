package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// `lifeboat version` prints what a bug report needs, from the binary `make build` makes. The go
// command stamps VCS information only where .git is a directory: not in a git worktree (.git is a
// file), not in an export without .git. So that this test runs everywhere instead of skipping, it
// commits the current sources (tracked and untracked, as git ls-files lists them) to a fresh
// repository and runs `make build` there — the go command's own VCS stamp — and then in a git
// worktree of that repository, where only the Makefile's -ldflags stamps carry the commit.
func TestVersionFromBuildInfo(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	files, err := exec.Command("git", "-C", "../..", "ls-files", "-z", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join("../..", f))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(src, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=lifeboat test", "-c", "user.email=test@lifeboat.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_COMMITTER_DATE=2026-03-04T05:06:07Z", "GIT_AUTHOR_DATE=2026-03-04T05:06:07Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(src, "init", "-q")
	git(src, "add", "-A")
	git(src, "commit", "-q", "--no-verify", "-m", "snapshot")
	head := git(src, "rev-parse", "HEAD")
	worktree := filepath.Join(filepath.Dir(src), "worktree")
	git(src, "worktree", "add", "-q", worktree)

	for _, dir := range []string{src, worktree} {
		exe := filepath.Join(t.TempDir(), "lifeboat")
		makeBuild := exec.Command("make", "-s", "build", "LIFEBOAT="+exe, "VERSION=v9.8.7-test")
		makeBuild.Dir = dir
		if out, err := makeBuild.CombinedOutput(); err != nil {
			t.Fatalf("make build in %s: %v\n%s", dir, err, out)
		}
		platform := runtime.GOOS + "/" + runtime.GOARCH
		for _, args := range [][]string{{"--version"}, {"version"}} {
			out, err := exec.Command(exe, args...).Output()
			text := string(out)
			for _, want := range []string{
				"lifeboat v9.8.7-test (" + head + ", built from a commit of 2026-03-04T05:06:07Z)\n",
				"  commit:      " + head + "\n",
				"  build date:  reproducible",
				"  go:          " + runtime.Version() + "\n",
				"  platform:    " + platform + "\n",
				"  build tags:  disable_grpc_modules\n",
				"  cgo:         off, trimpath: on\n",
			} {
				if err != nil || !strings.Contains(text, want) {
					t.Errorf("%s: lifeboat %v: %v; want %q in\n%s", filepath.Base(dir), args, err, want, text)
				}
			}
			if strings.Contains(text, "dirty") {
				t.Errorf("%s: lifeboat %v: a clean tree reported dirty:\n%s", filepath.Base(dir), args, text)
			}
		}
		out, err := exec.Command(exe, "version", "-o", "json").Output()
		var v map[string]any
		if jerr := json.Unmarshal(out, &v); err != nil || jerr != nil {
			t.Fatalf("version -o json: %v %v %s", err, jerr, out)
		}
		want := map[string]any{"version": "v9.8.7-test", "vcs_revision": head, "vcs_time": "2026-03-04T05:06:07Z",
			"vcs_modified": false, "build_date": "", "reproducible": true, "go_version": runtime.Version(),
			"goos": runtime.GOOS, "goarch": runtime.GOARCH, "build_tags": "disable_grpc_modules",
			"cgo_enabled": false, "trimpath": true, "module": "lifeboat", "exit_code": 0.0}
		for k, w := range want {
			if v[k] != w {
				t.Errorf("%s: version -o json: %s = %v, want %v\n%s", filepath.Base(dir), k, v[k], w, out)
			}
		}
	}

	// A change not committed: the Makefile stamps dirty (the worktree, where the go command
	// records nothing) — checked on the stamp alone, without a third build.
	if err := os.WriteFile(filepath.Join(worktree, "NOTES"), []byte("uncommitted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dry := exec.Command("make", "-n", "build")
	dry.Dir = worktree
	out, err := dry.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-X main.dirty=true") || !strings.Contains(string(out), "-X main.commit="+head) {
		t.Errorf("make -n build in a dirty worktree: %v\n%s", err, out)
	}
}
