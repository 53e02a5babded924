//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"lifeboat/internal/sample"
)

// Region names of very different lengths: a table sized per row or per block drifts with them.
const shortRegion, longRegion = "a", "europe-west-central-2-long"

// actableFleet replicates the fixture into one directory per region (with -q: nothing on stdout)
// and writes a fleet naming them; it returns the fleet file and each region's replica directory.
func actableFleet(t *testing.T, l *sample.Layout, m string, regions ...string) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	reps := map[string]string{}
	var b strings.Builder
	fmt.Fprintf(&b, "model: {name: llama-demo, manifest: %q}\nregions:\n", m)
	for _, name := range regions {
		reps[name] = filepath.Join(dir, "replica-"+name)
		r := cli(t, nil, "replicate", "--manifest", m, "--from", l.Root, "--to", reps[name], "-q")
		if r.code != 0 || r.stdout != "" || r.stderr != "" {
			t.Fatalf("replicate -q: exit %d, want 0 and nothing on stdout or stderr\nstdout: %q\nstderr: %q", r.code, r.stdout, r.stderr)
		}
		fmt.Fprintf(&b, "  %s: {replica: %q}\n", name, reps[name])
	}
	f := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return f, reps
}

// columnStarts returns, for each line the marker matches, where its match starts (in runes) —
// its first group's, when it has one: cells of one column start at the same place.
func columnStarts(lines []string, marker *regexp.Regexp) []int {
	var out []int
	for _, l := range lines {
		if loc := marker.FindStringSubmatchIndex(l); loc != nil {
			at := loc[0]
			if len(loc) > 2 {
				at = loc[2]
			}
			out = append(out, len([]rune(l[:at])))
		}
	}
	return out
}

func allEqual(xs []int) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return true
}

// TestCheckFailureNamesItsRepair: a replica that lost its tokenizer fails check, and next to the
// FAIL stands the replicate command that repairs it from a region whose copy did not fail — the
// same in -o json ("fix"), whose "url" is the URL alone beside a "region". Pasting the command
// repairs the replica and check passes. The table's columns line up whatever the region names'
// lengths. When no region holds a good copy, check says so instead of naming a source.
func TestCheckFailureNamesItsRepair(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	fleetFile, reps := actableFleet(t, l, m, shortRegion, longRegion, "us-east-1")
	if err := os.Remove(filepath.Join(reps[longRegion], "model", "tokenizer.json")); err != nil {
		t.Fatal(err)
	}

	r := cli(t, nil, "check", "--fleet", fleetFile)
	// The fleet names its replicas by absolute path, which it reads as file:// URLs.
	want := fmt.Sprintf("lifeboat replicate --manifest %s --from file://%s --to file://%s", m, reps[shortRegion], reps[longRegion])
	if r.code != 1 || !strings.HasPrefix(lastLine(r.stdout), "FAIL (exit 1)") || !regexp.MustCompile(`(?m)^  fix +`+regexp.QuoteMeta(want)+`$`).MatchString(r.stdout) {
		t.Fatalf("check with a lost tokenizer: exit %d, want 1 naming the fix %q\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	if n := strings.Count(r.stdout, "lifeboat replicate"); n != 1 {
		t.Errorf("check names %d repairs, want 1 (for the one failed replica)\n%s", n, r.stdout)
	}
	lines := strings.Split(r.stdout, "\n")
	// The replicas' lines: region, URL, summary and timing each start in one column.
	for what, re := range map[string]*regexp.Regexp{
		"URL":     regexp.MustCompile(`^\S+\s+\S+\s+(file://)`),
		"summary": regexp.MustCompile(`^\S.*(\b\d+ files: )`),
		"timing":  regexp.MustCompile(`\(quick, `),
	} {
		if s := columnStarts(lines, re); len(s) != 3 || !allEqual(s) {
			t.Errorf("the replicas' %s column starts at %v, want 3 equal places\n%s", what, s, r.stdout)
		}
	}
	// The findings under every replica share their columns too: the path (or the fix) and the
	// detail.
	if s := columnStarts(lines, regexp.MustCompile(`^  (?:UNVERIFIED|MISSING|fix) +(\S)`)); len(s) < 5 || !allEqual(s) {
		t.Errorf("the findings' second column starts at %v, want one place for all\n%s", s, r.stdout)
	}
	if s := columnStarts(lines, regexp.MustCompile(`size matches|expected `)); len(s) < 4 || !allEqual(s) {
		t.Errorf("the findings' last column starts at %v, want one place for all\n%s", s, r.stdout)
	}

	// -o json: region and url apart, and the same fix.
	r = cli(t, nil, "check", "--fleet", fleetFile, "-o", "json")
	var doc struct {
		Verify struct {
			Replicas []struct {
				Region, URL, Status, Fix string
			} `json:"replicas"`
		} `json:"verify"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 1 || len(doc.Verify.Replicas) != 3 {
		t.Fatalf("check -o json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	for _, rr := range doc.Verify.Replicas {
		if strings.ContainsAny(rr.URL, " ") || rr.URL != "file://"+reps[rr.Region] {
			t.Errorf("replica of region %q: url %q, want the URL alone, file://%s", rr.Region, rr.URL, reps[rr.Region])
		}
		if wantFix := map[bool]string{true: want}[rr.Region == longRegion]; rr.Fix != wantFix {
			t.Errorf("replica of region %q (%s): fix %q, want %q", rr.Region, rr.Status, rr.Fix, wantFix)
		}
	}

	// The command as printed repairs the replica (the paths need no quoting here).
	fields := strings.Fields(want)
	if r = cli(t, nil, fields[1:]...); r.code != 0 {
		t.Fatalf("%s: exit %d\n%s%s", want, r.code, r.stdout, r.stderr)
	}
	if r = cli(t, nil, "check", "--fleet", fleetFile); r.code != 0 || strings.Contains(r.stdout, "fix") {
		t.Fatalf("check after the repair: exit %d, want 0 and no fix\n%s%s", r.code, r.stdout, r.stderr)
	}

	// No region holds a good copy: said, and no source made up.
	for _, d := range reps {
		if err := os.Remove(filepath.Join(d, "model", "tokenizer.json")); err != nil {
			t.Fatal(err)
		}
	}
	r = cli(t, nil, "check", "--fleet", fleetFile)
	if r.code != 1 || strings.Count(r.stdout, "no region holds a good copy") != 3 || strings.Contains(r.stdout, "--from file://") {
		t.Fatalf("check with every replica broken: exit %d, want 1 saying no region holds a good copy (3 times)\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "check", "--fleet", fleetFile, "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || strings.Contains(r.stdout, `"fix"`) {
		t.Fatalf("check -o json with every replica broken: %v, want no fix\n%s", err, r.stdout)
	}
}

// TestVerifyNamesItsRepair: verify, given replica URLs, names the same repair with the URLs as
// given, and its lines line up whatever their lengths.
func TestVerifyNamesItsRepair(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	_, reps := actableFleet(t, l, m, shortRegion, longRegion)
	if err := os.Remove(filepath.Join(reps[shortRegion], "model", "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	r := cli(t, nil, "verify", "--manifest", m, reps[shortRegion], reps[longRegion])
	want := fmt.Sprintf("lifeboat replicate --manifest %s --from %s --to %s", m, reps[longRegion], reps[shortRegion])
	if r.code != 1 || !regexp.MustCompile(`(?m)^  fix +`+regexp.QuoteMeta(want)+`$`).MatchString(r.stdout) {
		t.Fatalf("verify of a replica that lost a file: exit %d, want 1 and %q\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	lines := strings.Split(r.stdout, "\n")
	if s := columnStarts(lines, regexp.MustCompile(`\d+ files: `)); len(s) != 2 || !allEqual(s) {
		t.Errorf("the replicas' summaries start at %v, want 2 equal places\n%s", s, r.stdout)
	}
	if s := columnStarts(lines, regexp.MustCompile(`^  (?:UNVERIFIED|MISSING|fix) +(\S)`)); len(s) < 4 || !allEqual(s) {
		t.Errorf("the findings' second column starts at %v, want one place for all\n%s", s, r.stdout)
	}
	if s := columnStarts(lines, regexp.MustCompile(`size matches|expected `)); len(s) < 3 || !allEqual(s) {
		t.Errorf("the findings' last column starts at %v, want one place for all\n%s", s, r.stdout)
	}
	// -q: nothing on stdout, the exit code and stderr tell; -o json is still written.
	r = cli(t, nil, "verify", "--manifest", m, reps[shortRegion], reps[longRegion], "-q")
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "verification failed") || !strings.HasSuffix(r.stderr, "\n  "+want+"\n") {
		t.Fatalf("verify -q of a broken replica: exit %d, want 1, nothing on stdout, the error on stderr ending with the fix\nstdout: %q\nstderr: %q", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "verify", "--manifest", m, reps[longRegion], "-q", "-o", "json")
	var doc struct {
		ExitCode *int `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 || doc.ExitCode == nil || *doc.ExitCode != 0 {
		t.Fatalf("verify -q -o json: exit %d, %v, want the JSON document\n%s", r.code, err, r.stdout)
	}
}

// TestQuietMeansQuiet: -q prints no table on stdout for any command that prints one — check,
// manifest build, manifest diff, restore — and the exit code tells; -o json is written all the
// same.
func TestQuietMeansQuiet(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	fleetFile, _ := actableFleet(t, l, m, shortRegion)
	for _, args := range [][]string{
		{"check", "--fleet", fleetFile},
		{"manifest", "build", "--model", l.ModelDir, "--out", filepath.Join(t.TempDir(), "m.json")},
		{"manifest", "diff", m, m},
		{"manifest", "show", m},
		{"restore", "--manifest", m, "--from", l.Root, "--to", filepath.Join(t.TempDir(), "restored")},
	} {
		loud := cli(t, nil, args...)
		r := cli(t, nil, append(args, "-q")...)
		if loud.stdout == "" || loud.code != 0 {
			t.Fatalf("%v: exit %d, printed nothing without -q: the test proves nothing\n%s", args, loud.code, loud.stderr)
		}
		if r.code != 0 || r.stdout != "" || r.stderr != "" {
			t.Errorf("%v -q: exit %d, want 0 and no output\nstdout: %q\nstderr: %q", args, r.code, r.stdout, r.stderr)
		}
	}
	r := cli(t, nil, "check", "--fleet", fleetFile, "-q", "-o", "json")
	if r.code != 0 || !json.Valid([]byte(r.stdout)) || !strings.Contains(r.stdout, `"verdict": "PASS"`) {
		t.Fatalf("check -q -o json: exit %d, want its JSON document\n%s%s", r.code, r.stdout, r.stderr)
	}
	// -o junit: the XML, and no verdict line on stderr.
	if r = cli(t, nil, "check", "--fleet", fleetFile, "-o", "junit"); !strings.Contains(r.stderr, "PASS: check ") {
		t.Fatalf("check -o junit: exit %d, want the verdict line on stderr (else the next check proves nothing)\n%s", r.code, r.stderr)
	}
	r = cli(t, nil, "check", "--fleet", fleetFile, "-q", "-o", "junit")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "<?xml") || r.stderr != "" {
		t.Fatalf("check -q -o junit: exit %d, want the XML and nothing on stderr\nstdout: %.200q\nstderr: %q", r.code, r.stdout, r.stderr)
	}
}

// TestManifestDiffRowsShareColumns: every file row of manifest diff has the same column widths,
// also the rows after a file's content diff (lines outside the columns).
func TestManifestDiffRowsShareColumns(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// A long path before the changed engine config, a short one after it.
	must(os.WriteFile(filepath.Join(l.DeployDir, "a-long-file-name-that-sets-the-path-column.txt"), []byte("x\n"), 0o644))
	b, err := os.ReadFile(l.EngineFile)
	must(err)
	must(os.WriteFile(l.EngineFile, []byte(strings.Replace(string(b), "max-model-len: 8192", "max-model-len: 4096", 1)), 0o644))
	must(os.WriteFile(filepath.Join(l.ModelDir, "z.txt"), []byte("z\n"), 0o644))
	m2 := filepath.Join(t.TempDir(), "m2.json")
	if r := cli(t, nil, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", m2, "-q"); r.code != 0 {
		t.Fatalf("build: exit %d\n%s", r.code, r.stderr)
	}
	r := cli(t, nil, "manifest", "diff", m, m2)
	if r.code != 0 || !strings.Contains(r.stdout, "\n    ") {
		t.Fatalf("manifest diff: exit %d, want a content diff between the rows\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rows []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if (strings.HasPrefix(line, "+ ") || strings.HasPrefix(line, "- ") || strings.HasPrefix(line, "~ ")) && !strings.HasPrefix(line, "~ model config") {
			rows = append(rows, line)
		}
	}
	// The second column (the role) starts after the longest path, in every row.
	if len(rows) < 3 {
		t.Fatalf("manifest diff: %d file rows, want 3 or more\n%s", len(rows), r.stdout)
	}
	var starts []int
	for _, row := range rows {
		path := strings.Fields(row)[1]
		rest := row[strings.Index(row, path)+len(path):]
		starts = append(starts, strings.Index(row, path)+len(path)+len(rest)-len(strings.TrimLeft(rest, " ")))
	}
	if !allEqual(starts) {
		t.Errorf("manifest diff: the role column starts at %v, want one place\n%s", starts, r.stdout)
	}
}
