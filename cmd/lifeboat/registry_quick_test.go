//go:build integration

package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
	"lifeboat/manifest"
)

// registryReplica pushes the sample bundle to a private registry (its blobs are changed behind
// Lifeboat's back, so no other test may share them) and returns the registry, the bundle, the
// manifest file and its parsed form, the replica's URL and the environment naming the Docker
// config that holds the registry's credentials.
func registryReplica(t *testing.T) (*emulators.Registry, *sample.Layout, string, *manifest.Manifest, string, []string) {
	t.Helper()
	reg := emulators.NewRegistry(t)
	env := []string{"DOCKER_CONFIG=" + emulators.DockerConfig(t, reg)}
	l, m := fixture(t, sample.Options{})
	man, err := manifest.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	target := reg.Location("lifeboat/quick") + ":v1"
	if r := cli(t, env, "manifest", "push", m, "--from", l.Root, target); r.code != 0 {
		t.Fatalf("push: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return reg, l, m, man, target, env
}

// largestModelFile is the model file with the most bytes (its blob is its own: no other file of
// the sample has the same content).
func largestModelFile(man *manifest.Manifest) manifest.File {
	var victim manifest.File
	for _, f := range man.Files {
		if f.Part == manifest.PartModel && f.Size > victim.Size {
			victim = f
		}
	}
	return victim
}

// Quick verify of a registry replica proves what it prints: with a blob deleted from the
// registry's storage behind Lifeboat's back (a direct HEAD answers 404) while the manifest still
// names its layer, the file is MISSING and verify exits 1, in text and JSON — not "OK" from the
// manifest's layer list.
func TestRegistryQuickVerifyHeadsEveryBlob(t *testing.T) {
	reg, _, m, man, target, env := registryReplica(t)
	if r := cli(t, env, "verify", "--manifest", m, target); r.code != 0 {
		t.Fatalf("verify of the intact replica: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	victim := largestModelFile(man)
	if err := os.RemoveAll(filepath.Dir(reg.BlobPath(victim.Digest.String()))); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodHead, "http://"+reg.Host+"/v2/lifeboat/quick/blobs/"+victim.Digest.String(), nil)
	req.Header.Set("Authorization", reg.BasicAuth())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the deleted blob still answers a HEAD with %d: the test did not delete it", resp.StatusCode)
	}

	r := cli(t, env, "verify", "--manifest", m, target)
	if r.code != 1 || !strings.Contains(r.stdout, victim.Path) || !strings.Contains(r.stdout, "MISSING") {
		t.Fatalf("quick verify with a blob gone: exit %d, want 1 naming %s MISSING\n%s%s", r.code, victim.Path, r.stdout, r.stderr)
	}
	j := cli(t, env, "verify", "--manifest", m, target, "-o", "json")
	var rep struct {
		Replicas []struct {
			Status string
			Files  []struct{ Path, Status string }
		}
	}
	if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil || len(rep.Replicas) != 1 {
		t.Fatalf("verify -o json: %v\n%s", err, j.stdout)
	}
	ok := 0
	for _, f := range rep.Replicas[0].Files {
		switch {
		case f.Path == victim.Path && f.Status != "MISSING":
			t.Errorf("%s is %s, want MISSING", f.Path, f.Status)
		case f.Status == "OK":
			ok++
		}
	}
	if j.code != 1 || rep.Replicas[0].Status == "OK" || ok != len(man.Files)-1 {
		t.Fatalf("verify -o json: exit %d, replica %s, %d OK of %d files\n%s", j.code, rep.Replicas[0].Status, ok, len(man.Files), j.stdout)
	}
}

// replicate --deep to a registry that cannot replace rotted bytes (it keeps the blob it has for a
// digest) never prints OK before the re-read that decides it: the summary line, the target's
// status and the JSON status all come from the re-read, and the run exits 1.
func TestRegistryReplicateDeepNeverOKBeforeReread(t *testing.T) {
	reg, l, m, man, target, env := registryReplica(t)
	victim := largestModelFile(man)
	p := reg.BlobPath(victim.Digest.String())
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}

	r := cli(t, env, "replicate", "--manifest", m, "--from", l.Root, "--to", target, "--deep")
	if r.code != 1 || !strings.Contains(r.stderr, victim.Path) {
		t.Fatalf("replicate --deep onto a rotted blob: exit %d, want 1 naming %s\n%s%s", r.code, victim.Path, r.stdout, r.stderr)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "OK") || strings.HasPrefix(line, "target after replicate: OK") {
			t.Fatalf("replicate printed %q and exited 1:\n%s%s", line, r.stdout, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, "target after replicate: FAILED") || !strings.Contains(r.stdout, "CORRUPT") {
		t.Fatalf("the target's status is not the re-read's:\n%s", r.stdout)
	}

	j := cli(t, env, "replicate", "--manifest", m, "--from", l.Root, "--to", target, "--deep", "-o", "json")
	var rep struct {
		Status string
		Target struct {
			Status string
			Files  []struct{ Path, Status string }
		}
	}
	if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil {
		t.Fatalf("replicate -o json: %v\n%s", err, j.stdout)
	}
	if j.code != 1 || rep.Status == "OK" || rep.Target.Status == "OK" {
		t.Fatalf("replicate -o json: exit %d with status %q, target %q\n%s", j.code, rep.Status, rep.Target.Status, j.stdout)
	}
	for _, f := range rep.Target.Files {
		if f.Path == victim.Path && f.Status != "CORRUPT" {
			t.Fatalf("%s is %s in the target after the run, want CORRUPT", f.Path, f.Status)
		}
	}
}
