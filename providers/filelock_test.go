package providers_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"lifeboat/providers"
)

// TestFileLockHeldByAStoppedProcess: the root's flock held by a process that cannot run (here
// another open file of this test, as a holder stopped with SIGSTOP mid-rename would) makes a
// conditional write end with the caller's context, not wait for it for good; once released,
// the write succeeds.
func TestFileLockHeldByAStoppedProcess(t *testing.T) {
	dir := t.TempDir()
	s, err := providers.Open(t.Context(), "file://"+dir, providers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	held, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Write(ctx, "failover/lock.json", strings.NewReader("{}"), providers.WriteOptions{Size: 2, IfNotExists: true})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a write under a held lock: %v, want the context's deadline", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a write under a lock held by another process did not end with its context")
	}
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(t.Context(), "failover/lock.json", strings.NewReader("{}"), providers.WriteOptions{Size: 2, IfNotExists: true}); err != nil {
		t.Fatalf("the write once the lock is free: %v", err)
	}
}
