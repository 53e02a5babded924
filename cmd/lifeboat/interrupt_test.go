//go:build integration

package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
)

// Issue 9 item 9: Ctrl-C mid-run exits 130 (128+SIGINT), not 1 ("found a problem"), and says it
// was interrupted. The store is a real loopback server that holds every request open, so the
// signal always lands while the command waits on it.
func TestInterruptExits130(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	seen := make(chan struct{}, 64)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case seen <- struct{}{}:
		default:
		}
		<-r.Context().Done() // until the client goes away
	}))
	t.Cleanup(hang.Close)
	src := "s3://bucket/llama?region=us-east-1&endpoint=" + hang.URL
	env := []string{"AWS_ACCESS_KEY_ID=AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY=example", "AWS_EC2_METADATA_DISABLED=true"}
	for _, c := range []struct {
		name string
		args []string
		want string // in stdout or stderr
	}{
		{"verify", []string{"verify", "--manifest", m, src}, "interrupted"},
		{"replicate", []string{"replicate", "--manifest", m, "--from", src, "--to", filepath.Join(t.TempDir(), "to")}, "run again to resume"},
		{"replicate to the store", []string{"replicate", "--manifest", m, "--from", l.Root, "--to", src}, "interrupted"},
		{"restore", []string{"restore", "--manifest", m, "--from", src, "--to", filepath.Join(t.TempDir(), "r")}, "run again to resume"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(testbed.LifeboatBinary(t), c.args...)
			cmd.Env = append(os.Environ(), env...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-seen:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatalf("no request reached the store\n%s%s", out.String(), errb.String())
			}
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 130 {
				t.Fatalf("exit %v, want 130\n%s%s", err, out.String(), errb.String())
			}
			if !strings.Contains(out.String()+errb.String(), c.want) || !strings.Contains(errb.String(), "lifeboat: interrupted") {
				t.Errorf("output does not say %q and 'lifeboat: interrupted':\n%s%s", c.want, out.String(), errb.String())
			}
			for len(seen) > 0 {
				<-seen
			}
		})
	}
}
