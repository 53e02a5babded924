//go:build integration

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"lifeboat/fleet/router"
	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
	"lifeboat/providers"
)

// slowBoots makes the rig's candidates take long to come up, so that a drill can be killed while
// it boots them.
func (r *crashRig) slowBoots(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(r.fleet)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), `--port {{.Port}}"`, `--port {{.Port}} --sim-load-delay 120s"`)
	if err := os.WriteFile(r.fleet, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// killEngineSims kills, at the end of the test, whatever engine-sim of this rig still runs (a
// failing cleanup must not leave them to the next test).
func (r *crashRig) killEngineSims(t *testing.T) {
	t.Cleanup(func() {
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			b, _ := os.ReadFile(p)
			if s := string(b); strings.Contains(s, "engine-sim") && strings.Contains(s, r.dir) {
				if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	})
}

// onCallSignals writes recorded signals (every region warm) for the on-call's failover.
func (r *crashRig) onCallSignals(t *testing.T) string {
	t.Helper()
	p := filepath.Join(r.dir, "signals.json")
	sig := map[string]any{"weights": drillBaseline, "regions": map[string]any{
		"us-east-1":    map[string]any{"warm": true, "healthy": true, "queue_wait_ms": 20, "running": 1, "prefill_tokens_per_s": 9600},
		"eu-west-1":    map[string]any{"warm": true, "healthy": true, "queue_wait_ms": 20, "running": 1, "prefill_tokens_per_s": 9600},
		"eu-central-1": map[string]any{"warm": true, "healthy": true, "queue_wait_ms": 20, "running": 1, "prefill_tokens_per_s": 9600},
		"archive":      map[string]any{"warm": false, "healthy": false},
	}}
	b, _ := json.Marshal(sig)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// storeOpener opens a state store URL as the test's process may (with the emulator's credentials).
type storeOpener func(ctx context.Context, url string) (providers.Store, error)

// eachStateStore runs f once with a file:// state store (state "": the rig's directory) and once
// with an S3 one on versitygw, with the environment the drill processes need to reach it.
func eachStateStore(t *testing.T, f func(t *testing.T, state string, env []string, open storeOpener)) {
	t.Run("file", func(t *testing.T) { f(t, "", nil, fileStoreOpen) })
	t.Run("s3", func(t *testing.T) {
		state, env, open := s3State(t)
		f(t, state, env, open)
	})
}

// s3State is a fresh state store on the shared versitygw: its URL, the environment that reaches
// it and how this process opens it.
func s3State(t *testing.T) (string, []string, storeOpener) {
	t.Helper()
	gw := emulators.SharedVersityGW(t)
	if err := gw.Bucket(context.Background(), "drill-state"); err != nil {
		t.Fatal(err)
	}
	env := []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey, "AWS_EC2_METADATA_DISABLED=true"}
	open := func(ctx context.Context, url string) (providers.Store, error) {
		return providers.Open(ctx, url, providers.Options{S3Credentials: credentials.NewStaticCredentialsProvider(gw.AccessKey, gw.SecretKey, "")})
	}
	return gw.URL("drill-state", testbed.FreshPrefix("owned")), env, open
}

// TestDrillCleanupKilledMidBootLeavesIncident: a drill killed with SIGKILL while its candidates
// boot; then the on-call evacuates eu-west-1 for a real incident (a separate `failover run`);
// then `drill cleanup`. The cleanup stops every candidate the dead drill started (recorded before
// each was launched), puts the fault back, and does not undo the on-call's failover: it names
// the run as left behind and exits 1.
func TestDrillCleanupKilledMidBootLeavesIncident(t *testing.T) {
	eachStateStore(t, killedMidBoot)
}

func killedMidBoot(t *testing.T, state string, env []string, _ storeOpener) {
	rig := newCrashRig(t, state, env, "200ms", crashDrill)
	rig.slowBoots(t)
	rig.killEngineSims(t)
	cmd, logf := rig.start(t, "--approve-all")
	deadline := time.Now().Add(3 * time.Minute)
	for len(rig.engineSims()) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if len(rig.engineSims()) < 3 {
		b, _ := os.ReadFile(logf)
		t.Fatalf("the drill never started its candidates:\n%s", b)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_, _ = cmd.Process.Wait()
	if !rig.router(t).Weights.Equal(drillBaseline) {
		t.Fatal("the router moved during the boot step")
	}
	sig := rig.onCallSignals(t)
	r := rig.cli(t, "failover", "run", "--fleet", rig.fleet, "--region", "eu-west-1", "--signals", sig, "--yes", "--reason", "INC-1 real incident")
	if r.code != 0 {
		t.Fatalf("the on-call's failover: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	incident := rig.router(t)
	if incident.Weights.Equal(drillBaseline) {
		t.Fatal("the on-call's failover did not move the router")
	}
	r = rig.cli(t, "drill", "cleanup", rig.drill)
	if r.code != 1 || !strings.Contains(r.stdout, "is not one this drill started") {
		t.Fatalf("cleanup after an incident failover: exit %d, want 1 naming the on-call's run\n%s%s", r.code, r.stdout, r.stderr)
	}
	if rs := rig.router(t); !rs.Weights.Equal(incident.Weights) {
		t.Fatalf("the cleanup undid the on-call's failover: %v", router.Diff(incident, rs))
	}
	if left := rig.engineSims(); len(left) > 0 {
		t.Fatalf("the dead drill's candidates still run after the cleanup: %v", left)
	}
	if got, err := os.ReadFile(rig.tokenizerPath()); err != nil || !bytes.Equal(got, rig.original) {
		t.Fatalf("the tokenizer after the cleanup: %v", err)
	}
}

// TestDrillCleanupKilledMidRampLeavesIncident: a drill killed with SIGKILL mid-evacuation; the
// on-call aborts its run (taking over the dead drill's lock) and evacuates eu-west-1 for a real
// incident; `drill cleanup` then stops the candidates, puts the fault back and leaves the
// on-call's failover in place, naming it (exit 1).
func TestDrillCleanupKilledMidRampLeavesIncident(t *testing.T) {
	eachStateStore(t, func(t *testing.T, state string, env []string, open storeOpener) {
		killedMidRamp(t, newCrashRig(t, state, env, "400ms", killDrill))
	})
	// the same through a real router: HAProxy's Runtime API, the state store on versitygw
	t.Run("haproxy-s3", func(t *testing.T) {
		state, env, _ := s3State(t)
		rig := newCrashRig(t, state, env, "400ms", killDrill)
		rig.useHAProxy(t)
		killedMidRamp(t, rig)
	})
}

func killedMidRamp(t *testing.T, rig *crashRig) {
	rig.killEngineSims(t)
	cmd, logf := rig.start(t, "--approve-all")
	rig.waitMidEvacuation(t, cmd, logf)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_, _ = cmd.Process.Wait()
	sig := rig.onCallSignals(t)
	if r := rig.cli(t, "failover", "abort", "--fleet", rig.fleet, "--signals", sig, "--yes", "--reason", "INC-2 stop the drill"); r.code != 0 {
		t.Fatalf("the on-call's abort: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := rig.cli(t, "failover", "run", "--fleet", rig.fleet, "--region", "eu-west-1", "--signals", sig, "--yes", "--reason", "INC-2 real incident"); r.code != 0 {
		t.Fatalf("the on-call's failover: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	incident := rig.router(t)
	r := rig.cli(t, "drill", "cleanup", rig.drill)
	if r.code != 1 || !strings.Contains(r.stdout, "is not one this drill started") {
		t.Fatalf("cleanup after an incident failover: exit %d, want 1 naming the on-call's run\n%s%s", r.code, r.stdout, r.stderr)
	}
	if rs := rig.router(t); !rs.Weights.Equal(incident.Weights) || rs.Weights.Equal(drillBaseline) {
		t.Fatalf("the cleanup undid the on-call's failover: %v", router.Diff(incident, rs))
	}
	if left := rig.engineSims(); len(left) > 0 {
		t.Fatalf("the dead drill's candidates still run after the cleanup: %v", left)
	}
	if got, err := os.ReadFile(rig.tokenizerPath()); err != nil || !bytes.Equal(got, rig.original) {
		t.Fatalf("the tokenizer after the cleanup: %v", err)
	}
}

// forgedRecord is a drill record as someone with write access to the state store could create
// it: on this host and boot, of a drill process that no longer runs.
func forgedRecord(t *testing.T, rig *crashRig, id string, extra map[string]any) map[string]any {
	t.Helper()
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	fb, err := os.ReadFile(rig.fleet)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(fb)
	rec := map[string]any{"id": id, "drill": "crash", "file": rig.drill, "fleet": rig.fleet, "host": host, "boot_id": strings.TrimSpace(string(boot)),
		"pid": dead.Process.Pid, "pid_start": "1", "sid": 999999, "holder": "lifeboat drill crash (pid 1)", "lock_ttl_s": 2, "started": time.Now().UTC(),
		"baseline": map[string]any{"weights": drillBaseline}, "temp_dir": "", "faults": []any{}, "candidates": []any{}, "left": []any{},
		"fleet_digest": "sha256:" + hex.EncodeToString(sum[:]), "runs": []any{}, "tokens": []any{}}
	for k, v := range extra {
		rec[k] = v
	}
	return rec
}

func putJSON(t *testing.T, s providers.Store, key string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(context.Background(), key, bytes.NewReader(b), providers.WriteOptions{Size: int64(len(b))}); err != nil {
		t.Fatal(err)
	}
}

// TestDrillCleanupRefusesForgedRecords: records written by someone who can write the state store
// but did not run the drill. Each is refused and named, and nothing is signalled, deleted or
// written: a process group 1 and another group of this host's (not in the drill's session), a
// temp dir outside the temp root and one that is a symbolic link, a fault copy under another
// key (drill history evidence), a fault path the drill file does not name, a record of another
// fleet file.
func TestDrillCleanupRefusesForgedRecords(t *testing.T) {
	eachStateStore(t, refusesForgedRecords)
}

func refusesForgedRecords(t *testing.T, state string, env []string, open storeOpener) {
	rig := newCrashRig(t, state, env, "200ms", crashDrill)
	ctx := context.Background()
	st, err := open(ctx, rig.state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	victim := exec.Command("sleep", "300")
	victim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Process.Kill(); _, _ = victim.Process.Wait() })
	vstat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", victim.Process.Pid))
	vf := strings.Fields(string(vstat[bytes.LastIndexByte(vstat, ')')+1:]))
	vstart := vf[19]
	vsid, _ := strconv.Atoi(vf[3])

	precious := filepath.Join(rig.dir, "elsewhere", "lifeboat-drill-precious")
	if err := os.MkdirAll(precious, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(precious, "keep"), []byte("keep"), 0o600)
	link := filepath.Join(rig.dir, "lifeboat-drill-777") // TMPDIR is rig.dir
	if err := os.Symlink(precious, link); err != nil {
		t.Fatal(err)
	}
	ownTemp := filepath.Join(rig.dir, "lifeboat-drill-888")
	if err := os.Mkdir(ownTemp, 0o700); err != nil {
		t.Fatal(err)
	}

	evidenceKey := "drills/history/20260101T000000.000Z-crash.json"
	evidence := []byte(`{"drill":"crash","ok":true}`)
	putJSON(t, st, evidenceKey, json.RawMessage(evidence))
	esum := sha256.Sum256(evidence)
	evil := []byte("planted by a forged record")
	psum := sha256.Sum256(evil)

	recs := map[string]map[string]any{
		"f-groups": {"candidates": []any{
			map[string]any{"region": "eu-west-1", "url": "http://127.0.0.1:1", "pgid": 1, "pid_start": "999999999999"},
			map[string]any{"region": "us-east-1", "url": "http://127.0.0.1:1", "pgid": victim.Process.Pid, "pid_start": vstart}},
			"temp_dir": precious},
		// The victim's true start time and session (as inside a PID namespace, where sessions
		// read 0), and a well-formed mark: only the mark in its environment is missing.
		"f-mark": {"sid": vsid, "candidates": []any{
			map[string]any{"region": "eu-central-1", "url": "http://127.0.0.1:1", "pgid": victim.Process.Pid, "pid_start": vstart, "mark": strings.Repeat("ab", 16)}}},
		"f-link": {"temp_dir": link},
		"f-copy": {"faults": []any{map[string]any{"name": "corrupt-file archive model/tokenizer.json", "kind": "corrupt-file", "region": "archive",
			"path": tokenizer, "copy": evidenceKey, "size": len(evidence), "sha256": hex.EncodeToString(esum[:])}}},
		"f-path": {"faults": []any{map[string]any{"name": "corrupt-file archive model/evil.bin", "kind": "corrupt-file", "region": "archive",
			"path": "model/evil.bin", "copy": "drills/active/f-path/faults/0.orig", "size": len(evil), "sha256": hex.EncodeToString(psum[:])}}},
		"f-fleet": {"fleet_digest": "sha256:" + strings.Repeat("0", 64), "temp_dir": ownTemp},
	}
	for id, extra := range recs {
		putJSON(t, st, "drills/active/"+id+".json", forgedRecord(t, rig, id, extra))
	}
	if _, err := st.Write(ctx, "drills/active/f-path/faults/0.orig", bytes.NewReader(evil), providers.WriteOptions{Size: int64(len(evil))}); err != nil {
		t.Fatal(err)
	}

	r := rig.cli(t, "drill", "cleanup", rig.drill)
	if r.code == 0 {
		t.Fatalf("cleanup of forged records: exit 0\n%s%s", r.stdout, r.stderr)
	}
	for _, want := range []string{
		"process group 1 of eu-west-1: refused",
		"process group " + strconv.Itoa(victim.Process.Pid) + " of us-east-1: refused",
		"process group " + strconv.Itoa(victim.Process.Pid) + " of eu-central-1: refused: its leader does not carry the candidate's mark",
		"temp dir " + precious + ": refused",
		"temp dir " + link + ": refused",
		"its copy \"" + evidenceKey + "\" is not under the record's own key",
		"names no corrupt-file fault of model/evil.bin",
		"record drills/active/f-fleet.json is for another fleet file",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the cleanup output does not name %q", want)
		}
	}
	if p, err := os.FindProcess(victim.Process.Pid); err != nil || p.Signal(syscall.Signal(0)) != nil {
		t.Error("the victim process group was signalled")
	}
	if vs, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", victim.Process.Pid)); bytes.Contains(vs, []byte(") Z ")) {
		t.Error("the victim process group was signalled (it exited)")
	}
	if _, err := os.Stat(filepath.Join(precious, "keep")); err != nil {
		t.Errorf("the directory outside the temp root was removed: %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symbolic link was removed: %v", err)
	}
	if _, err := os.Stat(ownTemp); err != nil {
		t.Errorf("the temp dir of a record for another fleet was removed: %v", err)
	}
	if _, err := st.Stat(ctx, evidenceKey); err != nil {
		t.Errorf("the drill history evidence was deleted: %v", err)
	}
	if _, err := os.Stat(filepath.Join(rig.dir, "replicas", "archive", "model", "evil.bin")); err == nil {
		t.Error("a forged record wrote a file the drill file does not name into the replica")
	}
	if got, _ := os.ReadFile(rig.tokenizerPath()); !bytes.Equal(got, rig.original) {
		t.Error("a forged record overwrote the tokenizer")
	}
	if t.Failed() {
		t.Logf("cleanup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestDrillLockTTLValidated: a drill file's lock_ttl is bounded as the fleet's (1s–1h): 2ns is
// bad input naming the file and line, before anything is planted or recorded.
func TestDrillLockTTLValidated(t *testing.T) {
	rig := newCrashRig(t, "", nil, "200ms", strings.Replace(crashDrill, "lock_ttl: 2s", "lock_ttl: 2ns", 1))
	r := rig.cli(t, "drill", "run", rig.drill, "--approve-all")
	if r.code != 2 || !strings.Contains(r.stderr, rig.drill+":5") || !strings.Contains(r.stderr, "lock_ttl") {
		t.Fatalf("lock_ttl: 2ns: exit %d, want 2 naming %s:5\n%s%s", r.code, rig.drill, r.stdout, r.stderr)
	}
	if recs := rig.records(t, fileStoreOpen); len(recs) != 0 {
		t.Fatalf("a drill with a bad lock_ttl recorded %v", recs)
	}
	if got, _ := os.ReadFile(rig.tokenizerPath()); !bytes.Equal(got, rig.original) {
		t.Fatal("a drill with a bad lock_ttl planted its fault")
	}
}

// TestBootCandidateEnvironment: a candidate gets PATH, locale and what its launcher names
// (env:, pass_env:), never Lifeboat's own secrets (key passwords, cloud credentials, the webhook
// URL) unless the fleet passes one.
func TestBootCandidateEnvironment(t *testing.T) {
	rig := newCrashRig(t, "", nil, "200ms", crashDrill)
	dump := filepath.Join(rig.dir, "candidate.env")
	b, _ := os.ReadFile(rig.fleet)
	s := strings.Replace(string(b), `    launcher: {kind: exec, command: "lifeboat engine-sim {{.ModelDir}} --config {{.EngineConfig}} --host {{.Host}} --port {{.Port}}"}`,
		`    launcher: {kind: exec, command: "sh -c 'env > `+dump+`'", env: {LITERAL_SETTING: "on"}, pass_env: [PASSED_THROUGH]}`, 1)
	if err := os.WriteFile(rig.fleet, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	secrets := []string{"LIFEBOAT_KEY_PASSWORD=hunter2-key", "COSIGN_PASSWORD=hunter2-cosign", "SLACK_WEBHOOK_URL=https://hooks.example/T0/secret",
		"AWS_SECRET_ACCESS_KEY=hunter2-aws", "AWS_ACCESS_KEY_ID=AKIAHUNTER2", "AZURE_STORAGE_KEY=hunter2-azure", "GOOGLE_APPLICATION_CREDENTIALS=/secret/gcp.json"}
	env := append(append([]string{}, secrets...), "PASSED_THROUGH=yes", "LANG=C.UTF-8")
	r := cli(t, append(rig.env, env...), "boot", "--fleet", rig.fleet, "--region", "us-east-1", "--timeout", "20s")
	got, err := os.ReadFile(dump)
	if err != nil {
		t.Fatalf("the candidate wrote no environment (boot exit %d): %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	for _, kv := range secrets {
		name, _, _ := strings.Cut(kv, "=")
		if bytes.Contains(got, []byte(name+"=")) {
			t.Errorf("the candidate inherited %s", name)
		}
	}
	for _, want := range []string{"PATH=", "LANG=C.UTF-8", "LITERAL_SETTING=on", "PASSED_THROUGH=yes"} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("the candidate lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("candidate environment:\n%s", got)
	}
}

// TestDrillSigningKeyReadOnceAtStart (issue 28 §4): `drill run --sign-key` reads and decrypts its
// key once, before any candidate is launched. Each candidate's own command removes the key file
// as it starts and dumps its environment; the drill still signs its report (with the key read at
// start, verified against the public key), and no candidate saw LIFEBOAT_KEY_PASSWORD or
// COSIGN_PASSWORD.
func TestDrillSigningKeyReadOnceAtStart(t *testing.T) {
	rig := newCrashRig(t, "", nil, "200ms", crashDrill)
	rig.killEngineSims(t)
	key, _ := testKeys(t)
	priv := filepath.Join(rig.dir, "sign.key")
	copyBytes := mustRead(t, key.priv)
	if err := os.WriteFile(priv, copyBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(rig.dir, "candidate.env")
	b, _ := os.ReadFile(rig.fleet)
	s := strings.ReplaceAll(string(b), `command: "lifeboat engine-sim {{.ModelDir}}`,
		`command: "sh -c 'env > `+dump+`; rm -f `+priv+`; exec \"$0\" \"$@\"' `+testbed.LifeboatBinary(t)+` engine-sim {{.ModelDir}}`)
	if s == string(b) {
		t.Fatal("the rig's launcher command changed: this test no longer edits it")
	}
	if err := os.WriteFile(rig.fleet, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(rig.dir, "report")
	env := append(append([]string{}, rig.env...), "LIFEBOAT_KEY_PASSWORD=hunter2-key", "COSIGN_PASSWORD=hunter2-cosign")
	r := cli(t, env, "drill", "run", rig.drill, "--approve-all", "--report", out, "--sign-key", priv)
	if _, err := os.Stat(priv); !os.IsNotExist(err) {
		t.Fatalf("no candidate removed the key file (drill exit %d): %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "boot passed") {
		t.Fatalf("the candidates did not boot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "report signed with key "+key.id) {
		t.Fatalf("the drill did not sign its report with the key read at start: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if v := cli(t, nil, "manifest", "verify-sig", filepath.Join(out, "report.json"), "--key", key.pub); v.code != 0 {
		t.Fatalf("verify-sig of the report: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	got, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"LIFEBOAT_KEY_PASSWORD", "COSIGN_PASSWORD"} {
		if bytes.Contains(got, []byte(name+"=")) {
			t.Errorf("a drill's candidate inherited %s", name)
		}
	}
	if bytes.Contains(got, []byte("hunter2")) {
		t.Error("a drill's candidate's environment holds a key password")
	}
}
