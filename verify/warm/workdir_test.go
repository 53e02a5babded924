//go:build integration

package warm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lifeboat/internal/testbed"
	"lifeboat/manifest"
	"lifeboat/verify/warm/execlauncher"
)

const otherUID = 65534 // nobody: "another local user"

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to play another local user (chown)")
	}
}

// plant does what another local user could do to a predictable working directory: a bundle with
// files of the manifest's sizes and a restore record forged from the public manifest.
func plant(t *testing.T, wd string, m *manifest.Manifest) {
	t.Helper()
	for _, f := range m.Files {
		p := filepath.Join(wd, "bundle", filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, f.Size); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeRecord(wd, m); err != nil {
		t.Fatal(err)
	}
}

func chownAll(t *testing.T, root string, uid int) {
	t.Helper()
	err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// markerLauncher is a real exec launcher whose command leaves a marker file: if it exists, Boot
// launched what was in the working directory.
func markerLauncher(marker string) *execlauncher.Launcher {
	return &execlauncher.Launcher{Command: "/bin/sh -c 'touch " + marker + "'", Grace: time.Second}
}

// TestBootRefusesAWorkdirOthersControl: issue 9 item 1. A working directory pre-created by
// another user with a planted bundle and a forged restore record used to be skipped into, and
// its bundle launched WARM; one writable by others, a symbolic link, or below another user's
// directory is as bad. Each is refused before anything is restored or launched.
func TestBootRefusesAWorkdirOthersControl(t *testing.T) {
	needRoot(t)
	m := testbed.Sample(t, "small").M
	cases := map[string]func(t *testing.T, base string) string{
		"owned by another user": func(t *testing.T, base string) string {
			wd := filepath.Join(base, "wd")
			os.Mkdir(wd, 0o700)
			plant(t, wd, m)
			chownAll(t, wd, otherUID)
			return wd
		},
		"writable by others": func(t *testing.T, base string) string {
			wd := filepath.Join(base, "wd")
			os.Mkdir(wd, 0o700)
			plant(t, wd, m)
			os.Chmod(wd, 0o777)
			return wd
		},
		"a symbolic link": func(t *testing.T, base string) string {
			real := filepath.Join(base, "real")
			os.Mkdir(real, 0o700)
			plant(t, real, m)
			wd := filepath.Join(base, "wd")
			os.Symlink(real, wd)
			return wd
		},
		"below another user's directory": func(t *testing.T, base string) string {
			theirs := filepath.Join(base, "theirs")
			os.Mkdir(theirs, 0o755)
			wd := filepath.Join(theirs, "wd")
			os.Mkdir(wd, 0o700)
			plant(t, wd, m)
			os.Chown(theirs, otherUID, otherUID)
			return wd
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			wd := setup(t, base)
			marker := filepath.Join(base, "launched")
			res, err := Boot(context.Background(), BootOptions{Manifest: m, Workdir: wd, Launcher: markerLauncher(marker),
				Probe: ProbeOptions{Timeout: 5 * time.Second}})
			if !errors.Is(err, ErrUnsafeWorkdir) || !errors.Is(err, ErrBootInput) {
				t.Errorf("Boot err = %v (skipped: %q), want ErrUnsafeWorkdir", err, res.RestoreSkipped)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the planted bundle was launched")
			}
			if RestoredEarlier(wd, m) {
				t.Errorf("RestoredEarlier trusts the planted record")
			}
		})
	}
}

// TestRestoreRecordMustBeOurs: in a working directory of our own, a record file someone else
// owns (or that they could write) proves nothing, and neither does one whose files were
// modified and had their modification times set back.
func TestRestoreRecordMustBeOurs(t *testing.T) {
	needRoot(t)
	m := testbed.Sample(t, "small").M
	wd := t.TempDir()
	plant(t, wd, m)
	if !RestoredEarlier(wd, m) {
		t.Fatal("our own record is not trusted: the test proves nothing")
	}
	os.Chown(recordPath(wd), otherUID, otherUID)
	if RestoredEarlier(wd, m) {
		t.Error("a record owned by another user is trusted")
	}
	os.Chown(recordPath(wd), 0, 0)
	os.Chmod(recordPath(wd), 0o666)
	if RestoredEarlier(wd, m) {
		t.Error("a record writable by others is trusted")
	}
	os.Chmod(recordPath(wd), 0o600)
	if !RestoredEarlier(wd, m) {
		t.Fatal("record not trusted after chmod back")
	}
	// Change a file's bytes and set its modification time back: the change time betrays it.
	p := filepath.Join(wd, "bundle", filepath.FromSlash(m.Files[len(m.Files)-1].Path))
	fi, _ := os.Stat(p)
	os.WriteFile(p, make([]byte, fi.Size()), 0o644)
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	if RestoredEarlier(wd, m) {
		t.Error("a file rewritten with its mtime set back still counts as unchanged")
	}
}

// TestDefaultWorkdirIsPrivate: the default is per user, not a predictable path in the shared
// temp directory, and PrepareWorkdir creates it 0700.
func TestDefaultWorkdirIsPrivate(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	wd, err := DefaultWorkdir("llama/3 70b", "../eu")
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(wd, os.TempDir()+"/lifeboat-boot") || !strings.HasPrefix(wd, os.Getenv("XDG_CACHE_HOME")) {
		t.Fatalf("DefaultWorkdir = %s", wd)
	}
	if err := PrepareWorkdir(wd); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(wd)
	if err != nil || fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
		t.Fatalf("workdir %s: %v %v", wd, fi.Mode(), err)
	}
}
