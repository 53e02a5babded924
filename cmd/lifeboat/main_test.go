package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/clitest"
	"lifeboat/internal/sample"
)

type result struct {
	code           int
	stdout, stderr string
}

// lifeboat runs the CLI in-process (its run function) with args and an empty stdin.
func lifeboat(t *testing.T, args ...string) result {
	t.Helper()
	return res(clitest.Call(t, run, clitest.Options{}, args...))
}

// absent is a directory that does not exist and that no other process can create: a path under
// this test's own temp dir. A fixed path such as /nonexistent is not safe — anything on a shared
// machine may create it.
func absent(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "absent")
}

// fixture generates the sample repo and builds its manifest through the CLI.
func fixture(t *testing.T, o sample.Options) (*sample.Layout, string) {
	t.Helper()
	l, err := sample.Generate(context.Background(), t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(t.TempDir(), "manifest.json")
	r := lifeboat(t, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", m)
	if r.code != 0 {
		t.Fatalf("build exit %d: %s", r.code, r.stderr)
	}
	return l, m
}

func TestExitCodesAndUsage(t *testing.T) {
	_, m := fixture(t, sample.Options{})
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"schemaVersion": 2, "mediaType": "nope"}`), 0o644)
	gone := absent(t) + "/nonexistent"
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"manifest", "build"}, 2, "needs --model"},
		{[]string{"manifest", "build", "--model", gone, "--out", filepath.Join(t.TempDir(), "x")}, 2, gone},
		{[]string{"manifest", "lint", m}, 2, "--model"},
		{[]string{"manifest", "lint", m, "--model", absent(t) + "/nonexistent"}, 2, "not a directory"},
		{[]string{"manifest", "show", bad}, 2, "bad.json: mediaType"},
		{[]string{"manifest", "show", absent(t) + "/nonexistent.json"}, 2, "nonexistent"},
		{[]string{"manifest", "show", m, "-o", "xml"}, 2, "-o xml"},
		{[]string{"manifest", "show", m, "--bogus"}, 2, "unknown flag"},
		{[]string{"manifest", "diff", m}, 2, "accepts 2 arg"},
		{[]string{"nosuchcommand"}, 2, "unknown command"},
		{[]string{"manifest", "diff", m, m, "--exit-code"}, 0, ""},
		{[]string{"version"}, 0, ""},
	} {
		r := lifeboat(t, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("lifeboat %v: exit %d stderr %q; want exit %d mentioning %q", c.args, r.code, r.stderr, c.code, c.msg)
		}
	}
}

func TestJSONErrorOnStdout(t *testing.T) {
	r := lifeboat(t, "manifest", "show", absent(t)+"/nonexistent.json", "-o", "json")
	var v struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.ExitCode != 2 || v.Error == "" {
		t.Fatalf("json error output %q (%v)", r.stdout, err)
	}
}

func TestLintCleanAndBrokenThroughCLI(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	r := lifeboat(t, "manifest", "lint", m, "--model", l.ModelDir)
	if r.code != 0 || !strings.Contains(r.stdout, "PASS") {
		t.Fatalf("clean lint: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Lose the tokenizer after the manifest was built: the manifest still lists it.
	os.Remove(filepath.Join(l.ModelDir, "tokenizer.json"))
	r = lifeboat(t, "manifest", "lint", m, "--model", l.ModelDir, "-o", "json")
	if r.code != 1 {
		t.Fatalf("broken lint exit %d, want 1\n%s", r.code, r.stdout)
	}
	var rep struct {
		Findings []struct{ Rule, Severity, Path, Message, Hint string } `json:"findings"`
		Errors   int                                                    `json:"errors"`
		Warnings int                                                    `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Findings {
		if f.Rule == "manifest-file-missing" && f.Path == "model/tokenizer.json" && f.Severity == "error" && f.Hint != "" {
			found = true
		}
	}
	if !found || rep.Errors == 0 {
		t.Fatalf("findings %+v lack manifest-file-missing for model/tokenizer.json", rep)
	}
	r = lifeboat(t, "manifest", "lint", m, "--model", l.ModelDir, "-o", "junit")
	var ju struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(r.stdout), &ju); err != nil {
		t.Fatalf("junit: %v\n%s", err, r.stdout)
	}
	failed := map[string]bool{}
	for _, c := range ju.Suites[0].Cases {
		failed[c.Name] = c.Failure != nil
	}
	if !failed["manifest-file-missing"] || ju.Failures == 0 || ju.Tests != len(ju.Suites[0].Cases) {
		t.Fatalf("junit does not fail manifest-file-missing: %+v", ju)
	}
}

func TestListRulesAndShowJSON(t *testing.T) {
	r := lifeboat(t, "manifest", "lint", "--list-rules", "-o", "json")
	var rules []struct{ ID, Severity, Summary string }
	if err := json.Unmarshal([]byte(r.stdout), &rules); err != nil || len(rules) == 0 {
		t.Fatalf("rules: %v %s", err, r.stdout)
	}
	for _, ru := range rules {
		if ru.ID == "" || (ru.Severity != "error" && ru.Severity != "warning") || ru.Summary == "" {
			t.Errorf("rule without id, severity or summary: %+v", ru)
		}
	}
	_, m := fixture(t, sample.Options{Quant: "awq"})
	r = lifeboat(t, "manifest", "show", m, "--files", "-o", "json")
	var s struct {
		Files int `json:"files"`
		Model struct {
			Quantization string `json:"quantization"`
		} `json:"model"`
		FileList []struct{ Path string } `json:"file_list"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || s.Files == 0 || s.Files != len(s.FileList) || s.Model.Quantization != "awq" {
		t.Fatalf("show json: %v %s", err, r.stdout)
	}
}

func TestBuildToStdoutAndDiffExitCode(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	r := lifeboat(t, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", "-")
	want, _ := os.ReadFile(m)
	if r.code != 0 || r.stdout != string(want) {
		t.Fatalf("--out - differs from the file build (exit %d)", r.code)
	}
	os.WriteFile(filepath.Join(l.ModelDir, "chat_template.jinja"), []byte("{{ 1 }}"), 0o644)
	m2 := filepath.Join(t.TempDir(), "m2.json")
	lifeboat(t, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", m2)
	r = lifeboat(t, "manifest", "diff", m, m2, "--exit-code")
	if r.code != 1 || !strings.Contains(r.stdout, "+ model/chat_template.jinja") || !strings.Contains(r.stdout, "1 added") {
		t.Fatalf("diff: exit %d\n%s", r.code, r.stdout)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"64MiB": 64 << 20, "2GiB": 2 << 30, "1.5GB": 1_500_000_000, "100": 100, "1k": 1024} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "-1GB", "1XB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}
