//go:build integration

package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
)

// A typo at any level is exit 2 with a suggestion, never help and exit 0 (a release gate with
// "manifest lnt" would pass without checking anything).
func TestUnknownSubcommandsAndFlagsExit2WithSuggestion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"manifest", "lnt", "dr/manifest.json"}, "lint"},
		{[]string{"demo", "int", "DIR"}, "init"},
		{[]string{"verfy"}, "verify"},
		{[]string{"verify", "--manfiest", "m.json", "x"}, "did you mean --manifest?"},
		{[]string{"manifest", "lint", "m.json", "--modle", "x"}, "did you mean --model?"},
	} {
		r := cli(t, nil, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("lifeboat %v: exit %d, stderr %q; want exit 2 suggesting %q", c.args, r.code, r.stderr, c.want)
		}
	}
	// A group without a subcommand still shows its help.
	if r := cli(t, nil, "manifest"); r.code != 0 || !strings.Contains(r.stdout, "Available Commands") {
		t.Errorf("lifeboat manifest: exit %d\n%s", r.code, r.stdout)
	}
}

// Every failing command says why in its -o format: one JSON document with error and exit_code
// (verify and probe exiting 4 too), a valid JUnit document (not an empty lint.xml).
func TestFailuresInJSONAndJUnit(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	port, err := emulators.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("http://127.0.0.1:%d", port)
	env := []string{"AWS_ACCESS_KEY_ID=lifeboattest", "AWS_SECRET_ACCESS_KEY=not-a-secret-at-all", "AWS_EC2_METADATA_DISABLED=true"}
	s3dead := "s3://bucket/llama?region=us-east-1&endpoint=" + dead
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"verify", "--manifest", m, s3dead, "--timeout", "3s"}, 4},
		{[]string{"probe", dead, "--served-model-name", "x", "--timeout", "300ms"}, 4},
		{[]string{"manifest", "lint", absent(t) + "/nonexistent.json", "--model", l.ModelDir}, 2},
		{[]string{"manifest", "show", absent(t) + "/nonexistent.json"}, 2},
		{[]string{"replicate", "--manifest", m, "--from", l.Root, "--to", s3dead}, 4},
	} {
		r := cli(t, env, append(c.args, "-o", "json")...)
		var v struct {
			Error    string `json:"error"`
			ExitCode *int   `json:"exit_code"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != c.code || v.ExitCode == nil || *v.ExitCode != c.code || v.Error == "" {
			t.Errorf("%v -o json: exit %d (want %d), %v, document %s", c.args, r.code, c.code, err, r.stdout)
		}
	}
	for _, args := range [][]string{
		{"manifest", "lint", absent(t) + "/nonexistent.json", "--model", l.ModelDir},
		{"verify", "--manifest", absent(t) + "/nonexistent.json", l.Root},
	} {
		r := cli(t, nil, append(args, "-o", "junit")...)
		var ju struct {
			Errors int `xml:"errors,attr"`
			Suites []struct {
				Cases []struct {
					Error *struct {
						Message string `xml:"message,attr"`
					} `xml:"error"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal([]byte(r.stdout), &ju); err != nil || r.code != 2 || ju.Errors != 1 ||
			!strings.Contains(ju.Suites[0].Cases[0].Error.Message, "nonexistent.json") {
			t.Errorf("%v -o junit: exit %d, %v\n%s", args, r.code, err, r.stdout)
		}
	}
}

// A dry run plans: a local target that the real run would create is planned as empty, and is not
// created. --out into a missing directory creates it.
func TestDryRunToNewDirAndOutIntoMissingDir(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	to := filepath.Join(t.TempDir(), "new", "replica")
	r := cli(t, nil, "replicate", "--manifest", m, "--from", l.Root, "--to", to, "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "15 file(s)") {
		t.Fatalf("dry run to a new directory: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(to); err == nil {
		t.Fatalf("the dry run created %s", to)
	}
	out := filepath.Join(t.TempDir(), "dr", "sub", "manifest.json")
	r = cli(t, nil, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", out)
	if _, err := os.Stat(out); r.code != 0 || err != nil {
		t.Fatalf("--out into a missing directory: exit %d %v\n%s", r.code, err, r.stderr)
	}
}

// probe says what it waits for while it waits; a URL without a scheme gets a suggestion.
func TestProbeSaysWhatItWaitsForAndSuggestsAScheme(t *testing.T) {
	for _, u := range []string{"127.0.0.1:8000", "localhost:8000"} {
		r := cli(t, nil, "probe", u, "--served-model-name", "x")
		if r.code != 2 || !strings.Contains(r.stderr, "did you mean http://"+u+"?") {
			t.Errorf("probe %s: exit %d, %q", u, r.code, r.stderr)
		}
	}
	port, err := emulators.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	r := cli(t, nil, "probe", "http://"+addr, "--served-model-name", "x", "--timeout", "6s")
	if r.code != 4 || !strings.Contains(r.stderr, "probe: listen: waiting for "+addr+" to accept a connection (timeout 6s), 5s elapsed") {
		t.Errorf("probe of a silent port: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := cli(t, nil, "probe", "http://"+addr, "--served-model-name", "x", "--timeout", "6s", "--quiet"); strings.Contains(r.stderr, "waiting") {
		t.Errorf("--quiet still prints progress: %q", r.stderr)
	}
}

// What stops vLLM from starting is an error; with --strict a warning fails everywhere: text,
// JSON and JUnit.
func TestLintUnknownEngineKeyIsAnErrorAndStrictFailsWarningsEverywhere(t *testing.T) {
	l, _ := fixture(t, sample.Options{})
	eng, _ := os.ReadFile(l.EngineFile)
	os.WriteFile(l.EngineFile, append(eng, []byte("max-model-length: 8192\n")...), 0o644)
	m := filepath.Join(t.TempDir(), "m.json")
	if r := cli(t, nil, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", m); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := cli(t, nil, "manifest", "lint", m, "--model", l.ModelDir)
	if r.code != 1 || !strings.Contains(r.stdout, "error[engine-unknown-key]") {
		t.Fatalf("unknown engine key: exit %d\n%s", r.code, r.stdout)
	}

	// No engine config, no deployment files: warnings only.
	warnOnly := filepath.Join(t.TempDir(), "w.json")
	if r := cli(t, nil, "manifest", "build", "--model", l.ModelDir, "--out", warnOnly); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := cli(t, nil, "manifest", "lint", warnOnly, "--model", l.ModelDir); r.code != 0 || !strings.HasPrefix(lastLine(r.stdout), "PASS") {
		t.Fatalf("warnings only: exit %d\n%s", r.code, r.stdout)
	}
	r = cli(t, nil, "manifest", "lint", warnOnly, "--model", l.ModelDir, "--strict")
	if r.code != 1 || !strings.HasPrefix(lastLine(r.stdout), "FAIL") || !strings.Contains(r.stdout, "--strict") {
		t.Errorf("--strict text: exit %d, %q", r.code, lastLine(r.stdout))
	}
	r = cli(t, nil, "manifest", "lint", warnOnly, "--model", l.ModelDir, "--strict", "-o", "json")
	var v struct {
		Passed   *bool `json:"passed"`
		ExitCode int   `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 1 || v.Passed == nil || *v.Passed || v.ExitCode != 1 {
		t.Errorf("--strict json: exit %d %v %s", r.code, err, r.stdout)
	}
	r = cli(t, nil, "manifest", "lint", warnOnly, "--model", l.ModelDir, "--strict", "-o", "junit")
	var ju struct {
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal([]byte(r.stdout), &ju); err != nil || r.code != 1 || ju.Failures == 0 {
		t.Errorf("--strict junit: exit %d, failures %d, %v", r.code, ju.Failures, err)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// restore speaks of restoring, and says a fully proven restore is proven (not "UNVERIFIED").
func TestRestoreSpeaksOfRestoring(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	r := cli(t, nil, "restore", "--manifest", m, "--from", l.Root, "--to", filepath.Join(t.TempDir(), "r"))
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Restoring: ") || strings.Contains(r.stdout, "replicat") || strings.Contains(r.stdout, "UNVERIFIED") ||
		!strings.Contains(r.stdout, "restored: all 15 files of the manifest are in place and proven") {
		t.Fatalf("restore: exit %d\n%s", r.code, r.stdout)
	}
}

// boot's waiting-queue limit is documented and settable (0 by default: a fresh replica has an
// empty queue), as probe's is (16 by default).
func TestBootWaitingQueueLimitIsSettable(t *testing.T) {
	for cmd, def := range map[string]string{"boot": "the default 0", "probe": "(default 16)"} {
		r := cli(t, nil, cmd, "--help")
		if !strings.Contains(r.stdout, "--max-waiting int") || !strings.Contains(r.stdout, "vllm:num_requests_waiting") || !strings.Contains(r.stdout, def) {
			t.Errorf("%s --help does not document --max-waiting %s:\n%s", cmd, def, r.stdout)
		}
	}
	l, m := fixture(t, sample.Options{})
	fleet := bootFleet(t, m, l.Root)
	r := lifeboat(t, "boot", "--fleet", fleet, "--region", "local", "--workdir", t.TempDir(), "--timeout", "60s", "--max-waiting", "5", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, "(max 5;") {
		t.Fatalf("boot --max-waiting 5: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Lint does not pass a repository that differs from its manifest: non-weight files are hashed
// (a temperature changed in place, same size), weights with --deep (rotten bytes in a shard), and
// a bundle's engine config must be the embedded one.
func TestLintFindsARepositoryThatDiffersFromItsManifest(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	gen := l.Path("model/generation_config.json")
	b, _ := os.ReadFile(gen)
	if !strings.Contains(string(b), "0.6") {
		t.Fatalf("fixture has no temperature 0.6: %s", b)
	}
	os.WriteFile(gen, []byte(strings.Replace(string(b), "0.6", "0.9", 1)), 0o644)
	r := cli(t, nil, "manifest", "lint", m, "--model", l.ModelDir)
	if r.code != 1 || !strings.HasPrefix(r.stdout, "the repository differs from the manifest: rebuild the manifest") ||
		!strings.Contains(r.stdout, "error[manifest-stale] model/generation_config.json: the content differs") {
		t.Fatalf("changed generation config: exit %d\n%s", r.code, r.stdout)
	}
	os.WriteFile(gen, b, 0o644)

	shard := l.Path("model/" + l.Shards[0])
	sb, _ := os.ReadFile(shard)
	for i := len(sb) - 4; i < len(sb); i++ {
		sb[i] ^= 0xff
	}
	os.WriteFile(shard, sb, 0o644)
	if r := cli(t, nil, "manifest", "lint", m, "--model", l.ModelDir); r.code != 0 {
		t.Fatalf("weights are compared by size without --deep: exit %d\n%s", r.code, r.stdout)
	}
	// By the manifest's BLAKE3 (the faster of its two cryptographic digests).
	if r := cli(t, nil, "manifest", "lint", m, "--model", l.ModelDir, "--deep"); r.code != 1 ||
		!strings.Contains(r.stdout, "error[manifest-stale] model/"+l.Shards[0]+": the content differs from the manifest (blake3 ") {
		t.Fatalf("--deep with rotten bytes in a shard: exit %d\n%s", r.code, r.stdout)
	}

	// A bundle whose engine config was edited after the build.
	eng := l.Path("engine/engine.yaml")
	eb, _ := os.ReadFile(eng)
	os.WriteFile(eng, append(eb, []byte("# edited\n")...), 0o644)
	r = cli(t, nil, "manifest", "lint", m, "--bundle", l.Root)
	if r.code != 1 || !strings.Contains(r.stdout, "error[manifest-stale] engine/engine.yaml: the content differs") {
		t.Fatalf("edited engine config in a bundle: exit %d\n%s", r.code, r.stdout)
	}
}

// Pointing at the wrong level gets a diagnosis first, and a replica where every file is missing
// is one finding, not fifteen.
func TestWrongLevelIsDiagnosed(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	r := cli(t, nil, "manifest", "lint", m, "--model", l.Root)
	if r.code != 2 || !strings.Contains(r.stderr, "this is a DR bundle — use --bundle "+l.Root) {
		t.Errorf("lint --model <bundle root>: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "manifest", "lint", m, "--bundle", l.ModelDir)
	if r.code != 2 || !strings.Contains(r.stderr, "no model/, engine/ or deploy/ here") || !strings.Contains(r.stderr, "use --model") {
		t.Errorf("lint --bundle <model dir>: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "verify", "--manifest", m, l.ModelDir)
	if r.code != 1 || strings.Count(r.stdout, "MISSING") != 2 || !strings.Contains(r.stdout, "MISSING  all 15 files of the manifest") ||
		!strings.Contains(r.stdout, "it holds a model repository itself") {
		t.Errorf("verify <model dir>: exit %d\n%s", r.code, r.stdout)
	}
	r = cli(t, nil, "verify", "--manifest", m, filepath.Dir(l.Root))
	if r.code != 1 || !strings.Contains(r.stdout, "a bundle seems to be one level down, under "+filepath.Base(l.Root)+"/") {
		t.Errorf("verify <parent of the bundle>: exit %d\n%s", r.code, r.stdout)
	}
}

// manifest diff shows what changed inside the config files the manifest holds.
func TestDiffShowsChangedSettings(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	eng, _ := os.ReadFile(l.EngineFile)
	re := regexp.MustCompile(`(?m)^max-model-len: (\d+)$`)
	old := re.FindStringSubmatch(string(eng))
	if old == nil {
		t.Fatalf("no max-model-len in %s", eng)
	}
	os.WriteFile(l.EngineFile, re.ReplaceAll(eng, []byte("max-model-len: 4096")), 0o644)
	m2 := filepath.Join(t.TempDir(), "m2.json")
	if r := cli(t, nil, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", m2); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := cli(t, nil, "manifest", "diff", m, m2)
	if r.code != 0 || !strings.Contains(r.stdout, "    max-model-len: "+old[1]+" → 4096") {
		t.Fatalf("diff: exit %d\n%s", r.code, r.stdout)
	}
}

// One way to pass the manifest: --manifest FILE everywhere (lint and show keep FILE as an alias).
func TestManifestFlagEverywhere(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	for _, args := range [][]string{
		{"manifest", "lint", "--manifest", m, "--model", l.ModelDir},
		{"manifest", "show", "--manifest", m},
		{"manifest", "lint", m, "--model", l.ModelDir},
		{"verify", "--manifest", m, l.Root},
	} {
		if r := cli(t, nil, args...); r.code != 0 {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	if r := cli(t, nil, "manifest", "show", "--manifest", m, "other.json"); r.code != 2 || !strings.Contains(r.stderr, "given twice") {
		t.Errorf("manifest given twice: exit %d %s", r.code, r.stderr)
	}
}
