package emulators

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStaleEtcdDataByLock: the sweep removes an etcd data directory only when its owner's lock
// is free — never one a live test binary holds, whatever pid its name or PID namespace has —
// and leaves a directory without a lock file alone until it is an hour old.
func TestStaleEtcdDataByLock(t *testing.T) {
	parent := t.TempDir()
	mk := func(name string) string {
		d := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(d, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	live, dead, fresh, old := mk("lifeboat-etcd-1"), mk("lifeboat-etcd-2"), mk("lifeboat-etcd-3"), mk("lifeboat-etcd-4")
	f, err := lockEtcdData(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := lockEtcdData(dead)
	if err != nil {
		t.Fatal(err)
	}
	g.Close() // its owner exited
	if err := os.Chtimes(old, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	removeStaleEtcdData(parent)
	for d, keep := range map[string]bool{live: true, dead: false, fresh: true, old: false} {
		if _, err := os.Stat(d); (err == nil) != keep {
			t.Errorf("%s: kept %v, want %v", filepath.Base(d), err == nil, keep)
		}
	}
}
