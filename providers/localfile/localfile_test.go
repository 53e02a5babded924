package localfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"lifeboat/providers/localfile"
)

func TestReadFileRefusesWhatIsNotABoundedRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 1025), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want error
	}{
		{fifo, localfile.ErrNotRegular}, // a blocking open would hang this test
		{"/dev/zero", localfile.ErrNotRegular},
		{dir, localfile.ErrNotRegular},
		{big, localfile.ErrTooLarge},
	} {
		_, err := localfile.ReadFile(c.name, 1024)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("ReadFile(%s) = %v, want %v naming the file", c.name, err, c.want)
		}
	}
	if b, err := localfile.ReadFile(ok, 5); err != nil || string(b) != "hello" {
		t.Fatalf("ReadFile(ok) = %q, %v", b, err)
	}
}
