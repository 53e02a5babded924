//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
	"lifeboat/providers"
)

// Issue 18 §5: hostile or broken state. A junk journal object, a record that panicked status
// and resume (an intent without its step), an 80 MB journal (8 MB records that today's reader
// takes whole) and a corrupt lock, on a file store and on versitygw. Through the real binary:
// no panic, memory bounded (the child's max RSS), the bad object named; status reports it and
// goes on (exit 1), resume refuses it (exit 3), abort still goes back to the baseline, and
// unlock replaces the corrupt lock by the pseudo-id status names.
func TestHostileStateDoesNotBlockStatusResumeAbortUnlock(t *testing.T) {
	bin := testbed.LifeboatBinary(t)
	for _, backend := range []string{"file", "s3"} {
		t.Run(backend, func(t *testing.T) {
			var gw *emulators.S3
			if backend == "s3" {
				gw = emulators.SharedVersityGW(t) // before failoverDir leaves the module's tree
			}
			dir := failoverDir(t)
			ctx := context.Background()
			var env []string
			var state providers.Store
			url := "file://" + filepath.Join(dir, "state")
			switch backend {
			case "file":
				s, err := providers.Open(ctx, url, providers.Options{})
				if err != nil {
					t.Fatal(err)
				}
				state = s
			case "s3":
				if err := gw.Bucket(ctx, "lifeboat-state"); err != nil {
					t.Fatal(err)
				}
				url = gw.URL("lifeboat-state", strings.ReplaceAll(t.Name(), "/", "-"))
				env = []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey, "AWS_EC2_METADATA_DISABLED=true"}
				s, err := providers.Open(ctx, url, providers.Options{S3Credentials: credentials.NewStaticCredentialsProvider(gw.AccessKey, gw.SecretKey, "")})
				if err != nil {
					t.Fatal(err)
				}
				state = s
			}
			t.Cleanup(func() { state.Close() })
			os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Replace(cliFleet, "state: file://./state", "state: "+url, 1)), 0o644)
			run := func(args ...string) (int, string, string, int64) {
				t.Helper()
				cmd := exec.Command(bin, args...)
				cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				err := cmd.Run()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				// KiB; counted from the floor every child inherits from this test process.
				rss, floor := childPeakRSS(cmd.ProcessState)
				if rss <= floor {
					rss = 0 // not above what the child inherited: nothing of its own to judge
				}
				if strings.Contains(errb.String(), "panic:") || strings.Contains(errb.String(), "goroutine ") {
					t.Fatalf("%v panicked:\n%s", args, errb.String())
				}
				return code, out.String(), errb.String(), rss
			}
			plant := func(key string, data []byte) {
				t.Helper()
				if _, err := state.Write(ctx, key, bytes.NewReader(data), providers.WriteOptions{Size: int64(len(data))}); err != nil {
					t.Fatal(err)
				}
			}
			if code, _, stderr, _ := run("failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "t"); code != 0 {
				t.Fatalf("run: exit %d\n%s", code, stderr)
			}
			var real string
			state.List(ctx, "failover/runs", func(o providers.Object) error {
				real = strings.Split(strings.TrimPrefix(o.Key, "failover/runs/"), "/")[0]
				return nil
			})
			// The real run gets a record that panicked status and resume: an intent with no step.
			n := 0
			state.List(ctx, "failover/runs/"+real, func(providers.Object) error { n++; return nil })
			bad, _ := json.Marshal(map[string]any{"seq": n, "run": real, "kind": "intent", "token": 1})
			badKey := fmt.Sprintf("failover/runs/%s/%06d.json", real, n)
			plant(badKey, bad)
			// A junk object as the newest run, and an 80 MB run of 8 MB records.
			junkKey := "failover/runs/999999-20991231T000000Z-junk/000000.json"
			plant(junkKey, []byte("\x00not a record{"))
			big := "999998-20991230T000000Z-big"
			for i := 0; i < 10; i++ {
				rec, _ := json.Marshal(map[string]any{"seq": i, "run": big, "kind": "hold", "step": 0, "detail": strings.Repeat("x", 8<<20-200)})
				plant(fmt.Sprintf("failover/runs/%s/%06d.json", big, i), rec)
			}

			code, stdout, stderr, rss := run("failover", "status", "--fleet", "fleet.yaml", "-o", "json")
			if code != 1 || !strings.Contains(stdout+stderr, junkKey) || !strings.Contains(stdout+stderr, badKey) {
				t.Errorf("status -o json: exit %d, want 1 naming %s and %s\n%.2000s\n%.2000s", code, junkKey, badKey, stdout, stderr)
			}
			if rss > 200<<10 {
				t.Errorf("status -o json on an 80 MB journal: max RSS %d MiB", rss>>10)
			}
			code, stdout, stderr, _ = run("failover", "status", "--fleet", "fleet.yaml")
			if code != 1 || !strings.Contains(stdout, "JOURNAL: ") || !strings.Contains(stdout, "Router:") {
				t.Errorf("status: exit %d, want 1 reporting the journal and going on to the router\n%s\n%s", code, stdout, stderr)
			}
			code, _, stderr, _ = run("failover", "resume", "--fleet", "fleet.yaml", "--signals", "warm.json")
			if code != 3 || !strings.Contains(stderr, junkKey) {
				t.Errorf("resume: exit %d, want 3 naming %s\n%s", code, junkKey, stderr)
			}

			// A corrupt lock: status names it with the pseudo-id that breaks it; run refuses.
			plant("failover/lock.json", []byte("{\"id\": 12, garbage"))
			code, stdout, stderr, _ = run("failover", "status", "--fleet", "fleet.yaml")
			id := regexp.MustCompile(`corrupt-[0-9a-f]{12}`).FindString(stdout)
			if code != 1 || !strings.Contains(stdout, "LOCK: ") || id == "" {
				t.Fatalf("status with a corrupt lock: exit %d\n%s\n%s", code, stdout, stderr)
			}
			if code, _, stderr, _ = run("failover", "abort", "--fleet", "fleet.yaml", "--signals", "warm.json", "--yes"); code != 3 || !strings.Contains(stderr, id) {
				t.Errorf("abort under a corrupt lock: exit %d, want 3 naming %s\n%s", code, id, stderr)
			}
			if code, stdout, stderr, _ = run("failover", "unlock", "--fleet", "fleet.yaml", "--id", id, "--reason", "corrupt"); code != 0 {
				t.Fatalf("unlock --id %s: exit %d\n%s\n%s", id, code, stdout, stderr)
			}
			// The junk and the 80 MB run stay; abort still goes back to the baseline.
			if code, stdout, stderr, _ = run("failover", "abort", "--fleet", "fleet.yaml", "--signals", "warm.json", "--yes", "--reason", "back"); code != 0 {
				t.Fatalf("abort: exit %d\n%s\n%s", code, stdout, stderr)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "weights.json")); !strings.Contains(string(b), `"weight": 50`) {
				t.Errorf("abort did not return to the baseline:\n%s", b)
			}
		})
	}
}
