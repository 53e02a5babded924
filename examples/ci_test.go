//go:build integration

package examples

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"lifeboat/internal/clitest"
	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) }

const (
	githubWorkflow = "github-actions/dr-gate.yml"
	gitlabCI       = "gitlab-ci/.gitlab-ci.yml"
)

// actionlint finds ./bin/actionlint (`make ci-tools`); a skip when missing, a failure under
// LIFEBOAT_REQUIRE_EMULATORS=1.
func actionlint(t *testing.T) string {
	t.Helper()
	root, err := emulators.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "bin", "actionlint")
	if _, err := os.Stat(p); err != nil {
		emulators.Unavailable(t, fmt.Errorf("actionlint: %s missing (run `make ci-tools`): %w", p, emulators.ErrNotInstalled))
	}
	return p
}

// shellcheck finds shellcheck (`make ci-tools`), through which actionlint checks every `run:`
// script; a skip when missing, a failure under LIFEBOAT_REQUIRE_EMULATORS=1.
func shellcheck(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("shellcheck")
	if err != nil {
		emulators.Unavailable(t, fmt.Errorf("shellcheck missing (run `make ci-tools`): %w", emulators.ErrNotInstalled))
	}
	return p
}

func runActionlint(t *testing.T, bin, file string) (int, string) {
	t.Helper()
	c := exec.Command(bin, "-no-color", "-shellcheck", shellcheck(t), file)
	out, err := c.CombinedOutput()
	if err != nil && c.ProcessState == nil {
		t.Fatal(err)
	}
	return c.ProcessState.ExitCode(), string(out)
}

// The GitHub Actions workflow passes actionlint (workflow syntax, expressions and contexts, job
// and step keys, action inputs; shellcheck on every run: script) — and actionlint is not a
// rubber stamp: a copy with a typo'd key, an unknown context or an unquoted path fails it.
func TestGitHubWorkflowPassesActionlint(t *testing.T) {
	bin := actionlint(t)
	if code, out := runActionlint(t, bin, githubWorkflow); code != 0 {
		t.Fatalf("actionlint %s: exit %d\n%s", githubWorkflow, code, out)
	}
	src, err := os.ReadFile(githubWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"typo'd key":      strings.Replace(string(src), "timeout-minutes: 30", "timeout-minute: 30", 1),
		"unknown context": strings.Replace(string(src), "secrets.DR_READONLY_ROLE", "secret.DR_READONLY_ROLE", 1),
		"unquoted path":   strings.Replace(string(src), `chmod +x "$RUNNER_TEMP/lifeboat"`, `chmod +x $RUNNER_TEMP/lifeboat`, 1),
	} {
		if bad == string(src) {
			t.Fatalf("%s: the mutation found nothing to change", name)
		}
		f := filepath.Join(t.TempDir(), "bad.yml")
		if err := os.WriteFile(f, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out := runActionlint(t, bin, f); code == 0 {
			t.Errorf("%s: actionlint passed a broken workflow:\n%s", name, out)
		}
	}
}

// localFleet lays out, in a new directory, what the templates expect at the root of a
// repository: dr/fleet.yaml and dr/drill.yaml (the README's quick-start fleet: three regions on
// local directories, engine-sim launchers, the file router) with dr/manifest.json and the three
// replicas filled.
func localFleet(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	dr := filepath.Join(dir, "dr")
	if err := os.MkdirAll(dr, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("quickstart/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dr, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := clitest.Options{Dir: dir}
	clitest.Succeed(t, in, "demo", "init", "llama")
	clitest.Succeed(t, in, "manifest", "build", "--model", "llama/model", "--engine", "llama/engine/engine.yaml",
		"--deploy", "llama/deploy", "--name", "llama-demo", "--out", "dr/manifest.json", "-q")
	for _, r := range []string{"use1", "euw1", "euc1"} {
		clitest.Succeed(t, in, "replicate", "--manifest", "dr/manifest.json", "--from", "llama", "--to", "dr/replicas/"+r, "-q")
	}
	return dir
}

// releaseServer serves the built binary as a release download, and returns its URL and SHA-256.
func releaseServer(t *testing.T) (url, sum string) {
	t.Helper()
	b, err := os.ReadFile(testbed.LifeboatBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/releases/lifeboat_linux_amd64" {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/releases/lifeboat_linux_amd64", hex.EncodeToString(h[:])
}

// basePath is PATH without any directory holding a lifeboat, so that only the templates'
// install steps can put one there.
func basePath() string {
	var keep []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "lifeboat")); err == nil {
			continue
		}
		keep = append(keep, d)
	}
	return strings.Join(keep, string(os.PathListSeparator))
}

// ghExpr is a ${{ … }} expression; the runner evaluates them before the shell sees the script.
var ghExpr = regexp.MustCompile(`\$\{\{[^}]*\}\}`)

type ghWorkflow struct {
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Env   map[string]string `yaml:"env"`
		Steps []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			If   string            `yaml:"if"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

type stepResult struct {
	name string
	code int
	out  string
}

// runGitHubJob runs the job's `run:` steps as an ubuntu runner would — bash -eo pipefail, the
// workflow's, job's and step's env, $GITHUB_PATH lines prepended to PATH for later steps, `if:
// always()` / `failure()` honoured — in dir. `uses:` steps (checkout, cloud credentials,
// artifact upload) are GitHub's and are skipped; expressions become empty, as an unset secret.
func runGitHubJob(t *testing.T, wf *ghWorkflow, job, dir string, override map[string]string) []stepResult {
	t.Helper()
	j, ok := wf.Jobs[job]
	if !ok {
		t.Fatalf("%s has no job %s", githubWorkflow, job)
	}
	runnerTemp := t.TempDir()
	ghPath := filepath.Join(runnerTemp, "github_path")
	if err := os.WriteFile(ghPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var results []stepResult
	failed := false
	for i, s := range j.Steps {
		if s.Run == "" {
			continue
		}
		switch cond := strings.TrimSpace(s.If); {
		case strings.Contains(cond, "always()"):
		case strings.Contains(cond, "failure()"):
			if !failed {
				continue
			}
		case cond == "":
			if failed {
				continue
			}
		default:
			t.Fatalf("%s step %d: the test does not know the condition %q", job, i, cond)
		}
		env := map[string]string{}
		for _, m := range []map[string]string{wf.Env, j.Env, s.Env, override} {
			for k, v := range m {
				env[k] = ghExpr.ReplaceAllString(v, "")
			}
		}
		added, err := os.ReadFile(ghPath)
		if err != nil {
			t.Fatal(err)
		}
		path := basePath()
		for _, d := range strings.Split(strings.TrimSpace(string(added)), "\n") {
			if d != "" {
				path = d + string(os.PathListSeparator) + path
			}
		}
		script := filepath.Join(runnerTemp, fmt.Sprintf("step%d.sh", i))
		if err := os.WriteFile(script, []byte(ghExpr.ReplaceAllString(s.Run, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		c := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		c.Dir = dir
		c.Env = append(os.Environ(), "PATH="+path, "RUNNER_TEMP="+runnerTemp, "GITHUB_PATH="+ghPath, "HOME="+runnerTemp)
		for k, v := range env {
			c.Env = append(c.Env, k+"="+v)
		}
		out, _ := c.CombinedOutput()
		r := stepResult{name: s.Name, code: c.ProcessState.ExitCode(), out: string(out)}
		results = append(results, r)
		if r.code != 0 {
			failed = true
		}
	}
	return results
}

func loadGitHub(t *testing.T) *ghWorkflow {
	t.Helper()
	b, err := os.ReadFile(githubWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	var wf ghWorkflow
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("%s: %v", githubWorkflow, err)
	}
	return &wf
}

func expectCodes(t *testing.T, what string, got []stepResult, want map[string]int) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range got {
		seen[r.name] = true
		w, ok := want[r.name]
		if !ok {
			w = 0
		}
		if r.code != w {
			t.Errorf("%s: step %q exited %d, want %d\n%s", what, r.name, r.code, w, r.out)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("%s: step %q did not run", what, name)
		}
	}
}

// The GitHub workflow's steps run as written: the install step fetches the release binary and
// checks its SHA-256 (and refuses one that does not match), the gate passes on an intact fleet and
// fails on one missing a tokenizer, with a JUnit report naming the file; the drill job runs the
// drill, its history and (only after a failure) its clean-up.
func TestGitHubWorkflowRunsAgainstALocalFleet(t *testing.T) {
	wf := loadGitHub(t)
	url, sum := releaseServer(t)
	release := map[string]string{"LIFEBOAT_URL": url, "LIFEBOAT_SHA256": sum}
	const install, gate = "Install Lifeboat, pinned by digest", "Lint the manifest and verify every region's replica"

	dir := localFleet(t)
	expectCodes(t, "gate, intact fleet", runGitHubJob(t, wf, "lifeboat-check", dir, release), map[string]int{install: 0, gate: 0})

	if err := os.Remove(filepath.Join(dir, "dr/replicas/euw1/model/tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	expectCodes(t, "gate, lost tokenizer", runGitHubJob(t, wf, "lifeboat-check", dir, release), map[string]int{install: 0, gate: 1})
	junit, err := os.ReadFile(filepath.Join(dir, "lifeboat-check.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(junit, []byte("<failure")) || !bytes.Contains(junit, []byte("model/tokenizer.json")) {
		t.Errorf("the gate's JUnit report does not name the lost file:\n%s", junit)
	}

	tampered := map[string]string{"LIFEBOAT_URL": url, "LIFEBOAT_SHA256": strings.Repeat("0", 64)}
	res := runGitHubJob(t, wf, "lifeboat-check", dir, tampered)
	if len(res) == 0 || res[0].name != install || res[0].code == 0 {
		t.Errorf("the install step accepted a binary whose SHA-256 does not match: %+v", res)
	}
	for _, r := range res[1:] {
		if r.name == gate {
			t.Errorf("the gate ran after a failed install")
		}
	}

	dir = localFleet(t)
	drill := runGitHubJob(t, wf, "dr-drill", dir, release)
	expectCodes(t, "drill", drill, map[string]int{install: 0, "Run the drill": 0, "Recovery time across drills": 0})
	for _, r := range drill {
		if r.name == "Put back what a failed drill left" {
			t.Errorf("the clean-up step ran after a drill that passed")
		}
	}
	for _, f := range []string{"drill.xml", "drill-report/report.html", "drill-report/SHA256SUMS"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the drill job left no %s: %v", f, err)
		}
	}
}

// GitLab CI: no offline JSON schema of .gitlab-ci.yml is at hand, so its structure is checked
// against GitLab's documented keywords: every top-level key is a global keyword or a job; every
// job (after extends) has a non-empty script of strings, a stage listed in stages, rules with
// `if`, and a JUnit report that its script writes; no key is unknown (a typo is an error).
var (
	gitlabGlobal = set("default", "include", "stages", "variables", "workflow", "image", "services",
		"cache", "before_script", "after_script")
	gitlabJobKeys = set("after_script", "allow_failure", "artifacts", "before_script", "cache",
		"coverage", "dast_configuration", "dependencies", "environment", "extends", "hooks",
		"id_tokens", "identity", "image", "inherit", "interruptible", "manual_confirmation", "needs",
		"pages", "parallel", "release", "resource_group", "retry", "rules", "run", "secrets",
		"services", "stage", "script", "tags", "timeout", "trigger", "variables", "when")
	gitlabArtifactKeys = set("paths", "exclude", "expire_in", "expose_as", "name", "public", "access",
		"reports", "untracked", "when")
	gitlabRuleKeys = set("if", "changes", "exists", "allow_failure", "needs", "variables", "when", "interruptible")
)

func set(keys ...string) map[string]bool {
	m := map[string]bool{}
	for _, k := range keys {
		m[k] = true
	}
	return m
}

type gitlabJob map[string]any

// gitlabJobs parses the file and returns its visible jobs with `extends` merged (one level of
// hash merge, as GitLab does for these keys), or the structural problems found.
func gitlabJobs(src []byte) (map[string]gitlabJob, []string) {
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, []string{err.Error()}
	}
	var errs []string
	stages := map[string]bool{}
	if s, ok := doc["stages"].([]any); ok {
		for _, v := range s {
			if name, ok := v.(string); ok {
				stages[name] = true
			}
		}
	} else {
		errs = append(errs, "stages: missing or not a list")
	}
	if v, ok := doc["variables"]; ok {
		if vars, ok := v.(map[string]any); !ok {
			errs = append(errs, "variables: not a mapping")
		} else {
			for k, val := range vars {
				if _, ok := val.(string); !ok {
					errs = append(errs, fmt.Sprintf("variables.%s: not a string", k))
				}
			}
		}
	}
	raw := map[string]gitlabJob{}
	for k, v := range doc {
		if gitlabGlobal[k] {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Sprintf("%s: neither a global keyword nor a job", k))
			continue
		}
		for key := range m {
			if !gitlabJobKeys[key] {
				errs = append(errs, fmt.Sprintf("%s.%s: not a job keyword", k, key))
			}
		}
		raw[k] = m
	}
	jobs := map[string]gitlabJob{}
	for name, j := range raw {
		if strings.HasPrefix(name, ".") {
			continue
		}
		merged := gitlabJob{}
		if ext, ok := j["extends"].(string); ok {
			base, ok := raw[ext]
			if !ok {
				errs = append(errs, fmt.Sprintf("%s.extends: no job %q", name, ext))
			}
			for k, v := range base {
				merged[k] = v
			}
		}
		for k, v := range j {
			merged[k] = v
		}
		delete(merged, "extends")
		jobs[name] = merged
		errs = append(errs, checkGitlabJob(name, merged, stages)...)
	}
	if len(jobs) == 0 {
		errs = append(errs, "no job")
	}
	sort.Strings(errs)
	return jobs, errs
}

func checkGitlabJob(name string, j gitlabJob, stages map[string]bool) []string {
	var errs []string
	for _, key := range []string{"before_script", "script", "after_script"} {
		v, ok := j[key]
		if !ok {
			if key == "script" {
				errs = append(errs, name+".script: missing")
			}
			continue
		}
		lines, ok := v.([]any)
		if !ok || len(lines) == 0 {
			errs = append(errs, fmt.Sprintf("%s.%s: not a non-empty list", name, key))
		}
		for _, l := range lines {
			if _, ok := l.(string); !ok {
				errs = append(errs, fmt.Sprintf("%s.%s: a line that is not a string: %v", name, key, l))
			}
		}
	}
	if st, _ := j["stage"].(string); !stages[st] {
		errs = append(errs, fmt.Sprintf("%s.stage: %q is not in stages", name, j["stage"]))
	}
	if rules, ok := j["rules"].([]any); ok {
		for i, r := range rules {
			m, ok := r.(map[string]any)
			if !ok {
				errs = append(errs, fmt.Sprintf("%s.rules[%d]: not a mapping", name, i))
				continue
			}
			for k := range m {
				if !gitlabRuleKeys[k] {
					errs = append(errs, fmt.Sprintf("%s.rules[%d].%s: not a rules keyword", name, i, k))
				}
			}
		}
	}
	art, _ := j["artifacts"].(map[string]any)
	for k := range art {
		if !gitlabArtifactKeys[k] {
			errs = append(errs, fmt.Sprintf("%s.artifacts.%s: not an artifacts keyword", name, k))
		}
	}
	reports, _ := art["reports"].(map[string]any)
	junit, _ := reports["junit"].(string)
	if junit == "" {
		errs = append(errs, name+".artifacts.reports.junit: missing (the CI's test view)")
	} else if script := fmt.Sprint(j["script"]); !strings.Contains(script, "> "+junit) {
		errs = append(errs, fmt.Sprintf("%s.artifacts.reports.junit: %s is not what its script writes", name, junit))
	}
	if w, _ := art["when"].(string); w != "always" {
		errs = append(errs, name+".artifacts.when: not always (a failed gate's report is the one wanted)")
	}
	return errs
}

// The GitLab file is structurally sound, and the check is not a rubber stamp: a typo'd keyword,
// a stage not declared, a report the script does not write each fail it.
func TestGitLabCIStructure(t *testing.T) {
	src, err := os.ReadFile(gitlabCI)
	if err != nil {
		t.Fatal(err)
	}
	jobs, errs := gitlabJobs(src)
	if len(errs) > 0 {
		t.Fatalf("%s:\n  %s", gitlabCI, strings.Join(errs, "\n  "))
	}
	for _, want := range []string{"lifeboat-check", "dr-drill"} {
		if _, ok := jobs[want]; !ok {
			t.Errorf("%s has no job %s", gitlabCI, want)
		}
	}
	// every script, as the runner's shell gets it, passes shellcheck (POSIX sh: the image's shell)
	sc := shellcheck(t)
	for name, j := range jobs {
		for _, key := range []string{"before_script", "script", "after_script"} {
			lines, ok := j[key].([]any)
			if !ok {
				continue
			}
			var b strings.Builder
			for _, l := range lines {
				fmt.Fprintln(&b, l)
			}
			c := exec.Command(sc, "-s", "sh", "-")
			c.Stdin = strings.NewReader(b.String())
			if out, err := c.CombinedOutput(); err != nil {
				t.Errorf("%s.%s: shellcheck: %v\n%s", name, key, err, out)
			}
		}
	}
	for name, mutate := range map[string][2]string{
		"typo'd keyword":     {"  script:\n    - lifeboat check", "  scirpt:\n    - lifeboat check"},
		"undeclared stage":   {"stage: drill", "stage: dril"},
		"report not written": {"junit: lifeboat-check.xml", "junit: check.xml"},
	} {
		bad := strings.Replace(string(src), mutate[0], mutate[1], 1)
		if bad == string(src) {
			t.Fatalf("%s: the mutation %q found nothing to change", name, mutate[0])
		}
		if _, errs := gitlabJobs([]byte(bad)); len(errs) == 0 {
			t.Errorf("%s: the structural check passed a broken file", name)
		}
	}
}

// runGitLabJob runs a job as a GitLab shell runner would: before_script and script in one shell
// that stops at the first failing line, then after_script in a new shell with CI_JOB_STATUS; the
// file's variables (and override) in the environment. It returns the job's exit code and output.
func runGitLabJob(t *testing.T, job gitlabJob, vars map[string]any, dir string, override map[string]string) (int, string) {
	t.Helper()
	lines := func(key string) string {
		var b strings.Builder
		b.WriteString("set -eo pipefail\n")
		for _, l := range job[key].([]any) {
			b.WriteString(l.(string) + "\n")
		}
		return b.String()
	}
	env := append(os.Environ(), "PATH="+basePath(), "CI_PROJECT_DIR="+dir, "HOME="+t.TempDir())
	for k, v := range vars {
		env = append(env, fmt.Sprintf("%s=%v", k, v))
	}
	for k, v := range override {
		env = append(env, k+"="+v)
	}
	run := func(script string, extra ...string) (int, string) {
		c := exec.Command("bash", "--noprofile", "--norc", "-c", script)
		c.Dir = dir
		c.Env = append(append([]string{}, env...), extra...)
		out, _ := c.CombinedOutput()
		return c.ProcessState.ExitCode(), string(out)
	}
	main := lines("before_script") + strings.TrimPrefix(lines("script"), "set -eo pipefail\n")
	code, out := run(main)
	if _, ok := job["after_script"]; ok {
		status := "success"
		if code != 0 {
			status = "failed"
		}
		acode, aout := run(lines("after_script"), "CI_JOB_STATUS="+status)
		out += aout
		if acode != 0 {
			t.Errorf("after_script exited %d\n%s", acode, aout)
		}
	}
	return code, out
}

// The GitLab jobs' scripts run as written: install the release binary (checked by SHA-256, a
// mismatch refused), the gate passing on an intact fleet and failing on a lost tokenizer, the
// drill passing with its report, its history in after_script.
func TestGitLabJobsRunAgainstALocalFleet(t *testing.T) {
	src, err := os.ReadFile(gitlabCI)
	if err != nil {
		t.Fatal(err)
	}
	jobs, errs := gitlabJobs(src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var doc struct {
		Variables map[string]any `yaml:"variables"`
	}
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	url, sum := releaseServer(t)
	release := map[string]string{"LIFEBOAT_URL": url, "LIFEBOAT_SHA256": sum}

	dir := localFleet(t)
	if code, out := runGitLabJob(t, jobs["lifeboat-check"], doc.Variables, dir, release); code != 0 {
		t.Errorf("lifeboat-check on an intact fleet: exit %d\n%s", code, out)
	}
	if err := os.Remove(filepath.Join(dir, "dr/replicas/euc1/model/tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	if code, out := runGitLabJob(t, jobs["lifeboat-check"], doc.Variables, dir, release); code != 1 {
		t.Errorf("lifeboat-check with a lost tokenizer: exit %d, want 1\n%s", code, out)
	}
	junit, err := os.ReadFile(filepath.Join(dir, "lifeboat-check.xml"))
	if err != nil || !bytes.Contains(junit, []byte("model/tokenizer.json")) {
		t.Errorf("the JUnit report does not name the lost file (%v):\n%s", err, junit)
	}
	bad := map[string]string{"LIFEBOAT_URL": url, "LIFEBOAT_SHA256": strings.Repeat("0", 64)}
	empty := t.TempDir()
	if code, out := runGitLabJob(t, jobs["lifeboat-check"], doc.Variables, empty, bad); code == 0 {
		t.Errorf("a binary whose SHA-256 does not match was accepted: exit 0\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(empty, "lifeboat-check.xml")); err == nil {
		t.Errorf("the gate ran with a binary whose SHA-256 does not match")
	}

	dir = localFleet(t)
	code, out := runGitLabJob(t, jobs["dr-drill"], doc.Variables, dir, release)
	if code != 0 {
		t.Errorf("dr-drill: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "1 run(s): 1 passed") {
		t.Errorf("dr-drill's after_script printed no history:\n%s", out)
	}
	for _, f := range []string{"drill.xml", "drill-report/report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("dr-drill left no %s: %v", f, err)
		}
	}
}
