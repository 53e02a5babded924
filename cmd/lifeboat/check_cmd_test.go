//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"lifeboat/internal/clitest"
	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
)

// checkFleet writes a fleet file whose regions have these replicas (region name → URL).
func checkFleet(t *testing.T, dir, manifest string, replicas map[string]string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "model: {name: llama-demo, manifest: %q}\nregions:\n", manifest)
	for name, url := range replicas {
		fmt.Fprintf(&b, "  %s: {replica: %q}\n", name, url)
	}
	f := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCheckDeepProvesWhatAzureCannot: blobs without Content-MD5, so quick
// verification leaves them UNVERIFIED and check passes them unproven — a byte flipped in one is
// invisible. check --deep re-hashes exactly those files: the clean replica is proven OK, the
// rotten one FAILs naming the CORRUPT file. Every run ends with its PASS/FAIL line (-o json:
// "verdict").
func TestCheckDeepProvesWhatAzureCannot(t *testing.T) {
	az := emulators.SharedAzurite(t)
	ctx := context.Background()
	if err := az.Container(ctx, "dr-deep"); err != nil {
		t.Fatal(err)
	}
	azc, err := azblob.NewClientFromConnectionString(az.ConnectionString(az.Key), nil)
	if err != nil {
		t.Fatal(err)
	}
	l, m := fixture(t, sample.Options{})
	upload := func(prefix string, rot bool) string {
		for _, f := range l.Files {
			b, err := os.ReadFile(l.Path(f))
			if err != nil {
				t.Fatal(err)
			}
			if rot && f == "model/"+l.Shards[1] {
				b[len(b)/2] ^= 0x20 // same size: only the bytes tell
			}
			if _, err := azc.UploadBuffer(ctx, "dr-deep", prefix+"/"+f, b, nil); err != nil {
				t.Fatal(err)
			}
			// Set Blob Properties without Content-MD5 clears it, as a tool that never sets it
			// leaves a block blob: nothing quick verification can compare.
			bc := azc.ServiceClient().NewContainerClient("dr-deep").NewBlobClient(prefix + "/" + f)
			if _, err := bc.SetHTTPHeaders(ctx, blob.HTTPHeaders{}, nil); err != nil {
				t.Fatal(err)
			}
		}
		return az.URL("dr-deep", prefix)
	}
	clean, rotten := upload("clean", false), upload("rotten", true)
	env := []string{"AZURE_STORAGE_CONNECTION_STRING=" + az.ConnectionString(az.Key)}

	one := checkFleet(t, t.TempDir(), m, map[string]string{"eu-west-1": clean})
	two := checkFleet(t, t.TempDir(), m, map[string]string{"eu-west-1": clean, "eu-central-1": rotten})

	// Quick: UNVERIFIED files pass, unproven, and the verdict line says how to prove them.
	r := cli(t, env, "check", "--fleet", two)
	if r.code != 0 || !strings.Contains(r.stdout, "UNVERIFIED") ||
		!strings.HasPrefix(lastLine(r.stdout), "PASS: check "+two+": ") || !strings.Contains(lastLine(r.stdout), "check --deep") {
		t.Fatalf("quick check of block blobs: exit %d, want 0 with a PASS line naming --deep\n%s%s", r.code, r.stdout, r.stderr)
	}

	// --deep on the clean replica: every unproven file re-hashed, all OK.
	r = cli(t, env, "check", "--fleet", one, "--deep")
	if r.code != 0 || strings.Contains(r.stdout, "UNVERIFIED") || !strings.HasPrefix(lastLine(r.stdout), "PASS: check ") ||
		!strings.Contains(lastLine(r.stdout), "replicas 1 OK") {
		t.Fatalf("check --deep, clean: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, env, "check", "--fleet", one, "--deep", "-o", "json")
	var doc struct {
		OK      bool   `json:"ok"`
		Verdict string `json:"verdict"`
		Verify  struct {
			Mode     string `json:"mode"`
			Replicas []struct {
				Status    string         `json:"status"`
				Counts    map[string]int `json:"counts"`
				BytesRead int64          `json:"bytes_read"`
			} `json:"replicas"`
		} `json:"verify"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 {
		t.Fatalf("check --deep -o json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if rr := doc.Verify.Replicas; doc.Verdict != "PASS" || !doc.OK || doc.Verify.Mode != "quick+deep" || len(rr) != 1 ||
		rr[0].Status != "OK" || rr[0].Counts["OK"] != len(l.Files) || rr[0].BytesRead == 0 {
		t.Fatalf("check --deep -o json: %+v", doc)
	}

	// --deep with the rotten replica: the flipped byte is found; FAIL, exit 1.
	r = cli(t, env, "check", "--fleet", two, "--deep")
	if r.code != 1 || !strings.Contains(r.stdout, "CORRUPT") || !strings.Contains(r.stdout, l.Shards[1]) ||
		!strings.HasPrefix(lastLine(r.stdout), "FAIL (exit 1): check "+two+": ") || !strings.Contains(lastLine(r.stdout), "1 FAILED") {
		t.Fatalf("check --deep, rotten: exit %d, want 1 with CORRUPT and a FAIL line\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, env, "check", "--fleet", two, "--deep", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 1 || doc.Verdict != "FAIL" || doc.OK {
		t.Fatalf("check --deep -o json, rotten: exit %d, %v, verdict %q\n%s", r.code, err, doc.Verdict, r.stdout)
	}
	// -o junit: stdout is the XML; the verdict line goes to stderr.
	r = cli(t, env, "check", "--fleet", two, "--deep", "-o", "junit")
	if r.code != 1 || !strings.HasPrefix(r.stdout, "<?xml") || !strings.Contains(r.stderr, "FAIL (exit 1): check ") {
		t.Fatalf("check --deep -o junit: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, az.Key) {
		t.Fatal("the Azure key reached the output")
	}
}

// TestCheckVerdictLineOnBadInput: even a check that cannot start ends with its FAIL line.
func TestCheckVerdictLineOnBadInput(t *testing.T) {
	r := cli(t, nil, "check", "--fleet", filepath.Join(t.TempDir(), "nope.yaml"))
	if r.code != 2 || !strings.HasPrefix(lastLine(r.stdout), "FAIL (exit 2): check ") || !strings.Contains(r.stdout, "did not complete") {
		t.Fatalf("check of a missing fleet: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// demoLayout lays out what `make demo` leaves: DIR/clouds.env (exports of the clouds' endpoint),
// DIR/clouds.pid, DIR/manifest.json and DIR/drill/fleet.yaml with a GCS replica.
func demoLayout(t *testing.T, m string, pid int, gcsHost string) (dir, fleet string) {
	t.Helper()
	dir = t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(m)
	must(err)
	must(os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644))
	must(os.WriteFile(filepath.Join(dir, "clouds.env"), []byte("export STORAGE_EMULATOR_HOST='"+gcsHost+"'\nCLOUD_GCS='gs://lifeboat-demo/llama'\n"), 0o600))
	must(os.WriteFile(filepath.Join(dir, "clouds.pid"), []byte(fmt.Sprintln(pid)), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "drill"), 0o755))
	fleet = filepath.Join(dir, "drill", "fleet.yaml")
	must(os.WriteFile(fleet, []byte("model: {name: llama-demo, manifest: ../manifest.json}\nregions:\n  eu-central-1: {geo: eu, replica: \"gs://lifeboat-demo/llama\"}\n"), 0o644))
	return dir, fleet
}

// TestCheckDemoFleetHint: after `make demo`, check --fleet .demo/drill/fleet.yaml used to say
// "set GOOGLE_APPLICATION_CREDENTIALS" — wrong, the replicas are the demo's local emulators.
// Stopped clouds: the hint says so and names make demo KEEP=1. Running but not sourced: the
// hint says to source clouds.env. Running and sourced (KEEP=1): check works.
func TestCheckDemoFleetHint(t *testing.T) {
	g := emulators.SharedFakeGCS(t)
	g.Bucket("lifeboat-demo")
	home := t.TempDir()
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home} // no cloud credentials, no emulator host
	l, m := fixture(t, sample.Options{})

	// A pid that is not running: a process that has exited and been reaped.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir, fleet := demoLayout(t, m, dead.Process.Pid, g.Host)
	r := res(clitest.Run(t, clitest.Options{Env: base, OnlyEnv: true}, "check", "--fleet", fleet))
	if r.code == 0 || !strings.Contains(r.stderr, "the demo's clouds are stopped") || !strings.Contains(r.stderr, "make demo KEEP=1") ||
		!strings.Contains(r.stderr, ". "+filepath.Join(dir, "clouds.env")+" && lifeboat check --fleet "+fleet) ||
		strings.Contains(r.stderr, "GOOGLE_APPLICATION_CREDENTIALS") || !strings.HasPrefix(lastLine(r.stdout), "FAIL (exit ") {
		t.Fatalf("check of a stopped demo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Running (this test process stands for democlouds), not sourced.
	dir, fleet = demoLayout(t, m, os.Getpid(), g.Host)
	r = res(clitest.Run(t, clitest.Options{Env: base, OnlyEnv: true}, "check", "--fleet", fleet))
	if r.code == 0 || !strings.Contains(r.stderr, "the demo's clouds are running, but this shell has not loaded") ||
		!strings.Contains(r.stderr, ". "+filepath.Join(dir, "clouds.env")) || strings.Contains(r.stderr, "GOOGLE_APPLICATION_CREDENTIALS") {
		t.Fatalf("check of a running demo, env not loaded: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Running and sourced: the replica is there once replicated, and check passes.
	withEnv := append(base, "STORAGE_EMULATOR_HOST="+g.Host)
	if r = res(clitest.Run(t, clitest.Options{Env: withEnv, OnlyEnv: true}, "replicate", "--manifest", m, "--from", l.Root, "--to", "gs://lifeboat-demo/llama")); r.code != 0 {
		t.Fatalf("replicate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = res(clitest.Run(t, clitest.Options{Env: withEnv, OnlyEnv: true}, "check", "--fleet", fleet))
	if r.code != 0 || !strings.HasPrefix(lastLine(r.stdout), "PASS: check ") {
		t.Fatalf("check of a kept, sourced demo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A fleet that is not the demo's keeps the store's own hint.
	other := checkFleet(t, t.TempDir(), m, map[string]string{"eu-central-1": "gs://lifeboat-demo/llama"})
	if r = res(clitest.Run(t, clitest.Options{Env: base, OnlyEnv: true}, "check", "--fleet", other)); r.code == 0 || strings.Contains(r.stderr, "demo's clouds") || !strings.Contains(r.stderr, "GOOGLE_APPLICATION_CREDENTIALS") {
		t.Fatalf("check of a non-demo fleet: exit %d\n%s", r.code, r.stderr)
	}
}
