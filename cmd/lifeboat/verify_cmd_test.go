//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/internal/faultproxy"
	"lifeboat/internal/sample"
	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/verify"
)

// brokenCopy copies the sample bundle at root and breaks it: tokenizer.json missing, config.json
// truncated, a shard bit-flipped (same size), an extra file.
func brokenCopy(t *testing.T, root string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "broken")
	if out, err := exec.Command("cp", "-r", root, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Remove(filepath.Join(dst, "model", "tokenizer.json")))
	must(os.Truncate(filepath.Join(dst, "model", "config.json"), 100))
	shard := filepath.Join(dst, "model", "model-00001-of-00002.safetensors")
	b, err := os.ReadFile(shard)
	must(err)
	b[len(b)/2] ^= 1
	must(os.WriteFile(shard, b, 0o644))
	must(os.WriteFile(filepath.Join(dst, "model", "notes.txt"), []byte("extra\n"), 0o644))
	return dst
}

type verifyJSON struct {
	Manifest string `json:"manifest"`
	Mode     string `json:"mode"`
	Replicas []struct {
		URL    string         `json:"url"`
		Status string         `json:"status"`
		Counts map[string]int `json:"counts"`
		Files  []struct {
			Path     string         `json:"path"`
			Status   string         `json:"status"`
			Expected map[string]any `json:"expected"`
			Actual   map[string]any `json:"actual"`
		} `json:"files"`
		Error     string `json:"error"`
		ErrorKind string `json:"error_kind"`
	} `json:"replicas"`
}

func TestVerifyLocalReplicas(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	broken := brokenCopy(t, l.Root)
	nFiles := len(l.Files)

	// A local copy has no native checksums: quick is UNVERIFIED (exit 0, 1 with --strict),
	// deep proves it.
	r := lifeboat(t, "verify", "--manifest", m, l.Root)
	if r.code != 0 || !strings.Contains(r.stdout, "UNVERIFIED") || !strings.Contains(r.stdout, "run --deep") {
		t.Fatalf("quick clean local: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = lifeboat(t, "verify", "--manifest", m, l.Root, "--strict"); r.code != 1 {
		t.Fatalf("--strict with UNVERIFIED files: exit %d", r.code)
	}
	r = lifeboat(t, "verify", "--manifest", m, l.Root, "--deep", "-j", "2")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "OK ") || !strings.Contains(r.stdout, fmt.Sprintf("%d files: %d OK", nFiles, nFiles)) {
		t.Fatalf("deep clean local: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// An empty replica (the bucket exists, nothing was ever copied) is every file MISSING.
	r = lifeboat(t, "verify", "--manifest", m, t.TempDir())
	if r.code != 1 || !strings.Contains(r.stdout, fmt.Sprintf("%d files: 0 OK, %d MISSING", nFiles, nFiles)) {
		t.Fatalf("empty replica: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The broken copy: exactly which file differs and how.
	r = lifeboat(t, "verify", "--manifest", m, l.Root, broken, "--deep")
	if r.code != 1 {
		t.Fatalf("deep broken: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"FAILED       file://" + broken,
		"1 MISSING, 1 SIZE_MISMATCH, 1 CORRUPT; 1 EXTRA",
		"MISSING        model/tokenizer.json",
		"SIZE_MISMATCH  model/config.json",
		"actual 100 B (listing)",
		"CORRUPT        model/model-00001-of-00002.safetensors  blake3 expected ",
		"EXTRA          model/notes.txt",
		"2 replica(s), deep verification: 1 OK, 1 FAILED",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("deep output lacks %q:\n%s", want, r.stdout)
		}
	}
	// --digest sha256: the same verdicts, proven by the layer digests.
	r = lifeboat(t, "verify", "--manifest", m, l.Root, broken, "--deep", "--digest", "sha256")
	if r.code != 1 || !strings.Contains(r.stdout, "CORRUPT        model/model-00001-of-00002.safetensors  sha256 expected ") ||
		!strings.Contains(r.stdout, "1 MISSING, 1 SIZE_MISMATCH, 1 CORRUPT; 1 EXTRA") {
		t.Errorf("deep --digest sha256: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"--deep", "--digest", "md5"}, {"--digest", "sha256"}} {
		r = lifeboat(t, append([]string{"verify", "--manifest", m, l.Root}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "--digest") {
			t.Errorf("verify %v: exit %d, want 2 naming --digest\n%s", args, r.code, r.stderr)
		}
	}

	// JSON: every file of every replica, with expected and actual facts.
	r = lifeboat(t, "verify", "--manifest", m, l.Root, broken, "-o", "json")
	if r.code != 1 {
		t.Fatalf("quick broken json: exit %d", r.code)
	}
	var rep verifyJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	if rep.Mode != "quick" || rep.Manifest != m || len(rep.Replicas) != 2 {
		t.Fatalf("json report %+v", rep)
	}
	b := rep.Replicas[1]
	if b.Status != "FAILED" || len(b.Files) != nFiles+1 || b.Counts["MISSING"] != 1 || b.Counts["SIZE_MISMATCH"] != 1 ||
		b.Counts["EXTRA"] != 1 || b.Counts["UNVERIFIED"] != nFiles-2 || b.Counts["OK"] != 0 {
		t.Fatalf("broken replica in json: %s %v (%d files)", b.Status, b.Counts, len(b.Files))
	}
	for _, f := range b.Files {
		switch f.Path {
		case "model/config.json":
			if f.Status != "SIZE_MISMATCH" || f.Expected["size"] == nil || f.Actual["size"] != float64(100) || f.Actual["source"] != "listing" {
				t.Errorf("config.json in json: %+v", f)
			}
		case "model/tokenizer.json":
			if f.Status != "MISSING" || f.Expected["sha256"] == nil || len(f.Actual) != 0 {
				t.Errorf("tokenizer.json in json: %+v", f)
			}
		}
	}

	// JUnit: one suite per replica, one case per file; failures fail the case, UNVERIFIED is
	// skipped.
	r = lifeboat(t, "verify", "--manifest", m, l.Root, broken, "-o", "junit")
	var ju struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Tests int    `xml:"tests,attr"`
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
				Out     string    `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(r.stdout), &ju); err != nil || r.code != 1 {
		t.Fatalf("junit: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	if len(ju.Suites) != 2 || ju.Suites[1].Name != "file://"+broken || ju.Suites[1].Tests != nFiles+1 || ju.Failures != 2 || ju.Tests != 2*nFiles+1 {
		t.Fatalf("junit counts: tests %d failures %d suites %d", ju.Tests, ju.Failures, len(ju.Suites))
	}
	for _, c := range ju.Suites[1].Cases {
		switch c.Name {
		case "model/tokenizer.json", "model/config.json":
			if c.Failure == nil {
				t.Errorf("junit case %s does not fail", c.Name)
			}
		case "model/notes.txt":
			if c.Failure != nil || !strings.Contains(c.Out, "EXTRA") {
				t.Errorf("junit EXTRA case: %+v", c)
			}
		default:
			if c.Skipped == nil {
				t.Errorf("junit case %s: UNVERIFIED should be skipped", c.Name)
			}
		}
	}
}

func TestVerifyUsageErrors(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{}`), 0o644)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"verify", l.Root}, "--manifest"},
		{[]string{"verify", "--manifest", m}, "at least one replica URL"},
		{[]string{"verify", "--manifest", bad, l.Root}, "bad.json"},
		{[]string{"verify", "--manifest", absent(t) + "/nonexistent.json", l.Root}, "nonexistent"},
		{[]string{"verify", "--manifest", m, "ftp://host/x"}, `unknown scheme "ftp"`},
		{[]string{"verify", "--manifest", m, "s3://"}, "missing bucket"},
		{[]string{"verify", "--manifest", m, "s3://Bad_Bucket/x"}, "bucket name"},
		{[]string{"verify", "--manifest", m, "az://acct"}, "missing container"},
		{[]string{"verify", "--manifest", m, "s3://b/x?colour=red"}, "unknown query parameter"},
		{[]string{"verify", "--manifest", m, "s3://AKIAEXAMPLE:hunter2secret@bucket/x"}, "credentials do not belong"},
		{[]string{"verify", "--manifest", m, "s3://bucket/x"}, "region"},
		{[]string{"verify", "--manifest", m, l.Root, "-j", "-1"}, "-j"},
		{[]string{"verify", "--manifest", m, l.Root, "-o", "xml"}, "-o xml"},
		{[]string{"verify", "--manifest", m, filepath.Join(t.TempDir(), "nope")}, "not found"},
	} {
		t.Setenv("AWS_REGION", "")
		r := lifeboat(t, c.args...)
		out := r.stdout + r.stderr
		if r.code != 2 || !strings.Contains(out, c.msg) {
			t.Errorf("lifeboat %v: exit %d, want 2 mentioning %q:\n%s", c.args, r.code, c.msg, out)
		}
		if strings.Contains(out, "hunter2secret") {
			t.Errorf("lifeboat %v printed a credential:\n%s", c.args, out)
		}
	}
}

// The replicas' listings start while the manifest is read, yet the errors come in the order of
// a run that reads the manifest first and then opens the stores one by one: a bad manifest wins
// over a bad URL and stops a listing under way (here one that would never end), and of two bad
// URLs the first one given is reported.
func TestVerifyErrorOrderWithListingsUnderWay(t *testing.T) {
	_, m := fixture(t, sample.Options{})
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{}`), 0o644)
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hung.Close)
	never := fmt.Sprintf("s3://bucket/llama?region=us-east-1&endpoint=%s", url.QueryEscape(hung.URL))
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "hunter2secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "")
	for _, c := range []struct {
		args     []string
		msg, not string
		code     int
	}{
		{[]string{"--manifest", bad, never}, "bad.json", "", 2},
		{[]string{"--manifest", bad, never, "ftp://host/x"}, "bad.json", "ftp", 2},
		{[]string{"--manifest", m, never, "s3://bucket/x", "ftp://host/x"}, "region", "ftp", 2},
		{[]string{"--manifest", m, never, "ftp://host/x", "s3://bucket/x"}, `unknown scheme "ftp"`, "region", 2},
	} {
		r := lifeboat(t, append([]string{"verify"}, c.args...)...)
		out := r.stdout + r.stderr
		if r.code != c.code || !strings.Contains(out, c.msg) || (c.not != "" && strings.Contains(out, c.not)) {
			t.Errorf("lifeboat verify %v: exit %d, want %d mentioning %q and not %q:\n%s", c.args, r.code, c.code, c.msg, c.not, out)
		}
	}
}

// A replica behind a server that only ever answers 503 is UNREACHABLE: exit 4, never OK; one that
// answers 403 is a credentials problem: exit 2. Both say so, and print no credential.
func TestVerifyUnreachableAndDenied(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	serve := func(code int) string {
		in := faultproxy.New(&faultproxy.Rule{Action: faultproxy.Status(code, "")})
		srv := httptest.NewServer(in.Handler(http.NotFoundHandler()))
		t.Cleanup(srv.Close)
		return fmt.Sprintf("s3://bucket/llama?region=us-east-1&endpoint=%s", url.QueryEscape(srv.URL))
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "hunter2secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")

	down := serve(503)
	r := lifeboat(t, "verify", "--manifest", m, down, "--timeout", "1s", "-o", "json")
	var rep verifyJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	// Whichever comes first — the SDK giving up or --timeout — it is UNREACHABLE, exit 4.
	if r.code != 4 || rep.Replicas[0].Status != "UNREACHABLE" || rep.Replicas[0].Counts["OK"] != 0 || (rep.Replicas[0].ErrorKind != "unreachable" && rep.Replicas[0].ErrorKind != "timeout") ||
		!(strings.Contains(r.stderr, "timed out") || strings.Contains(r.stderr, "unreachable after retries")) {
		t.Fatalf("persistent 503: exit %d %+v\n%s", r.code, rep.Replicas[0], r.stderr)
	}
	// With a clean local replica beside it, still 4: nothing failed, one replica is unknown.
	r = lifeboat(t, "verify", "--manifest", m, l.Root, down, "--deep", "--timeout", "1s")
	if r.code != 4 || !strings.Contains(r.stdout, "UNREACHABLE") || !strings.Contains(r.stdout, "1 OK, 1 UNREACHABLE") {
		t.Fatalf("local + unreachable: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A failed file elsewhere wins: exit 1.
	r = lifeboat(t, "verify", "--manifest", m, brokenCopy(t, l.Root), down, "--timeout", "1s")
	if r.code != 1 {
		t.Fatalf("broken + unreachable: exit %d", r.code)
	}

	r = lifeboat(t, "verify", "--manifest", m, serve(403))
	if r.code != 2 || !strings.Contains(r.stdout, "permission denied") {
		t.Fatalf("403: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, out := range []string{r.stdout, r.stderr} {
		if strings.Contains(out, "hunter2secret") {
			t.Fatal("a credential reached the output")
		}
	}
}

func TestVerifyExitCodePrecedence(t *testing.T) {
	cause := map[verify.ErrorKind]error{
		verify.ErrorUnreachable: providers.ErrUnreachable, verify.ErrorPermission: providers.ErrPermission,
		verify.ErrorNotFound: providers.ErrNotFound, verify.ErrorCanceled: context.Canceled,
		verify.ErrorMisconfigured: providers.ErrMisconfigured, verify.ErrorOther: errors.New("HTTP 400"),
		verify.ErrorTimeout: context.DeadlineExceeded,
	}
	rr := func(kind verify.ErrorKind, st ...verify.Status) verify.ReplicaResult {
		r := verify.ReplicaResult{ErrorKind: kind, Err: cause[kind], Error: string(kind)}
		for _, s := range st {
			r.Files = append(r.Files, verify.FileResult{Status: s})
		}
		return r
	}
	for _, c := range []struct {
		replicas []verify.ReplicaResult
		strict   bool
		want     int
	}{
		{[]verify.ReplicaResult{rr("", verify.StatusOK, verify.StatusExtra)}, false, 0},
		{[]verify.ReplicaResult{rr("", verify.StatusOK, verify.StatusUnverified)}, false, 0},
		{[]verify.ReplicaResult{rr("", verify.StatusOK, verify.StatusUnverified)}, true, 1},
		{[]verify.ReplicaResult{rr(verify.ErrorUnreachable, verify.StatusError)}, false, 4},
		{[]verify.ReplicaResult{rr(verify.ErrorOther, verify.StatusError)}, false, 2},
		{[]verify.ReplicaResult{rr(verify.ErrorTimeout, verify.StatusError)}, false, 4},
		{[]verify.ReplicaResult{rr(verify.ErrorUnreachable, verify.StatusError), rr(verify.ErrorMisconfigured, verify.StatusError)}, false, 2},
		{[]verify.ReplicaResult{rr(verify.ErrorUnreachable, verify.StatusError), rr(verify.ErrorPermission, verify.StatusError)}, false, 2},
		{[]verify.ReplicaResult{rr(verify.ErrorNotFound, verify.StatusError), rr("", verify.StatusCorrupt)}, false, 1},
		{[]verify.ReplicaResult{rr("", verify.StatusChecksumMismatch), rr(verify.ErrorUnreachable)}, false, 1},
		{[]verify.ReplicaResult{rr(verify.ErrorCanceled, verify.StatusError)}, false, 130},
	} {
		if got := exitCode((&verify.Report{Replicas: c.replicas}).Err(c.strict)); got != c.want {
			t.Errorf("%+v strict=%v: exit %d, want %d", c.replicas, c.strict, got, c.want)
		}
	}
}

// Through a real provider (fake-gcs-server in-process): a replica uploaded with its checksums
// quick-verifies OK from one listing per directory; a planted bit flip is CHECKSUM_MISMATCH.
func TestVerifyGCSThroughCLI(t *testing.T) {
	g := emulators.SharedFakeGCS(t) // sets STORAGE_EMULATOR_HOST
	g.Bucket("verify-cli")
	l, mpath := fixture(t, sample.Options{})
	m, err := manifest.ReadFile(mpath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := providers.Open(ctx, "gs://verify-cli/llama", providers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, f := range m.Files {
		data, _ := os.ReadFile(l.Path(f.Path))
		if _, err := s.Write(ctx, f.Path, bytes.NewReader(data), providers.WriteOptions{Size: f.Size, Checksums: providers.Checksums(f.Sums)}); err != nil {
			t.Fatal(err)
		}
	}
	r := lifeboat(t, "verify", "--manifest", mpath, "gs://verify-cli/llama")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "OK           gs://verify-cli/llama/") {
		t.Fatalf("quick gs://: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cfg, _ := os.ReadFile(l.Path("model/config.json"))
	cfg[10] ^= 4
	if _, err := s.Write(ctx, "model/config.json", bytes.NewReader(cfg), providers.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	r = lifeboat(t, "verify", "--manifest", mpath, "gs://verify-cli/llama")
	if r.code != 1 || !strings.Contains(r.stdout, "CHECKSUM_MISMATCH  model/config.json") || !strings.Contains(r.stdout, "crc32c expected") {
		t.Fatalf("quick gs:// with a bit flip: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A quick verification of a small manifest raises GOGC for its run and puts it back after; a big
// manifest, or a GOGC or GOMEMLIMIT of the user's, leaves the collector alone.
func TestQuickGC(t *testing.T) {
	gcPercent := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	before := gcPercent()
	small := filepath.Join(t.TempDir(), "small.json")
	big := filepath.Join(t.TempDir(), "big.json")
	os.WriteFile(small, []byte(`{}`), 0o644)
	os.WriteFile(big, make([]byte, quickGCMaxManifest+1), 0o644)
	for _, c := range []struct {
		file, gogc, memlimit string
		want                 int
	}{
		{small, "", "", quickGCPercent},
		{big, "", "", before},
		{small, "50", "", before},
		{small, "", "1GiB", before},
		{absent(t), "", "", before},
	} {
		t.Setenv("GOGC", c.gogc)
		t.Setenv("GOMEMLIMIT", c.memlimit)
		restore := quickGC(c.file)
		if got := gcPercent(); got != c.want {
			t.Errorf("%+v: GOGC %d during the run, want %d", c, got, c.want)
		}
		restore()
		if got := gcPercent(); got != before {
			t.Errorf("%+v: GOGC %d after the run, want %d again", c, got, before)
		}
	}
}
