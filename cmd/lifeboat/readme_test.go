//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"lifeboat/internal/testbed"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// exampleBlocks returns the ```sh blocks that follow each "<!-- MARKER" comment in doc, in order.
func exampleBlocks(t *testing.T, doc, marker string) []string {
	t.Helper()
	var blocks []string
	rest := doc
	for {
		var ok bool
		_, rest, ok = strings.Cut(rest, "<!-- "+marker)
		if !ok {
			break
		}
		var found bool
		_, rest, found = strings.Cut(rest, "```sh\n")
		if !found {
			t.Fatalf("a %q marker with no ```sh block after it", marker)
		}
		var block string
		block, rest, _ = strings.Cut(rest, "```")
		blocks = append(blocks, block)
	}
	if len(blocks) == 0 {
		t.Fatalf("no %q block", marker)
	}
	return blocks
}

// exitRE ends a command line of an example block: "# exit N", optionally followed by a remark.
var exitRE = regexp.MustCompile(`\s+# exit (\d+)\b[^\n]*$`)

// runBlocks runs every command of the blocks, as written, in dir with the built lifeboat first on
// PATH, and checks each exits with the code its "# exit N" says. A line without "# exit N"
// continues onto the next (a trailing backslash is dropped). A command whose output says "is
// deprecated" fails: documents teach the current spelling. It returns the number of commands.
func runBlocks(t *testing.T, what, dir string, blocks []string) int {
	t.Helper()
	bin := filepath.Dir(testbed.LifeboatBinary(t))
	n := 0
	for _, block := range blocks {
		var cmd string
		for _, line := range strings.Split(block, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			m := exitRE.FindStringSubmatch(line)
			if m == nil {
				cmd += strings.TrimSuffix(strings.TrimSpace(line), "\\") + " "
				continue
			}
			cmd += strings.TrimSpace(line[:len(line)-len(m[0])])
			want, _ := strconv.Atoi(m[1])
			c := exec.Command("bash", "-c", cmd)
			c.Dir = dir
			c.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
			out, _ := c.CombinedOutput()
			if got := c.ProcessState.ExitCode(); got != want {
				t.Errorf("%s: %s\nexit %d, the document says %d\n%s", what, cmd, got, want, out)
			}
			// A document teaches the one spelling: a deprecated flag it still uses would come
			// back as muscle memory.
			if strings.Contains(string(out), "is deprecated") {
				t.Errorf("%s: %s\nuses a deprecated spelling; write the one the warning names:\n%s", what, cmd, out)
			}
			cmd = ""
			n++
		}
		if strings.TrimSpace(cmd) != "" {
			t.Errorf("%s: a command with no \"# exit N\": %s", what, cmd)
		}
	}
	return n
}

// docs/commands.md matches the binary: every command of its example block runs, as written, in
// an empty directory, and exits with the code its "# exit N" says.
func TestCommandsDocRunsAsWritten(t *testing.T) {
	blocks := exampleBlocks(t, readDoc(t, "docs/commands.md"), "commands-example")
	if n := runBlocks(t, "docs/commands.md", t.TempDir(), blocks); n < 15 {
		t.Fatalf("only %d commands found in docs/commands.md's block", n)
	}
}

// The README's ten-minute walkthrough — set-up, the release gate, the drill, the failover —
// runs as written, block after block in one directory (with the clone's examples/ in it, as
// from the root of a clone), each command exiting as its "# exit N" says.
func TestReadmeQuickstartRunsAsWritten(t *testing.T) {
	dir := t.TempDir()
	abs, err := filepath.Abs(filepath.Join(repoRoot, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	blocks := exampleBlocks(t, readDoc(t, "README.md"), "quickstart")
	if len(blocks) < 4 {
		t.Fatalf("%d quickstart blocks in the README, want the set-up and the three jobs", len(blocks))
	}
	for _, job := range []string{"lifeboat check", "lifeboat drill run", "lifeboat failover run"} {
		if !strings.Contains(strings.Join(blocks, "\n"), job) {
			t.Errorf("the README's quickstart has no %q", job)
		}
	}
	runBlocks(t, "README.md quickstart", dir, blocks)
	if _, err := os.Stat(filepath.Join(dir, "dr", "report", "report.html")); err != nil {
		t.Errorf("the quickstart drill wrote no report: %v", err)
	}
	checkQuickstartDrillReport(t, filepath.Join(dir, "dr", "report"))
}

// checkQuickstartDrillReport: the quick start's drill (it loses eu-west-1, with --approve-all)
// never repairs from eu-west-1 nor boots a candidate there, its verifications verified every
// copy, and its reports say what recovery covers and who approved, readable raw and rendered.
func checkQuickstartDrillReport(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Lost    string `json:"lost_region"`
		Repairs []struct{ Region, From string }
		Boots   []struct{ Region, Role, From string }
		Steps   []struct{ Name, Status, Detail string }
		Verify  []struct {
			Phase    string
			Replicas []struct{ Region, Mode, Status string }
		}
		Evidence struct {
			ApproveAll bool `json:"approve_all"`
		}
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Lost != "eu-west-1" || len(rep.Repairs) == 0 || len(rep.Boots) == 0 || len(rep.Verify) != 2 {
		t.Fatalf("the quick start's drill report: %s", b)
	}
	for _, r := range rep.Repairs {
		if r.From == rep.Lost || r.From == "" {
			t.Errorf("repaired %s from %q: a drill that loses %s never copies from it", r.Region, r.From, rep.Lost)
		}
	}
	candidates := 0
	for _, bt := range rep.Boots {
		switch {
		case bt.Region == rep.Lost && (bt.Role != "stand-in" || bt.From == "" || bt.From == rep.Lost):
			t.Errorf("boot in the lost region %s: role %q from %q (want a stand-in restored from another region)", bt.Region, bt.Role, bt.From)
		case bt.Region != rep.Lost && bt.Role != "candidate":
			t.Errorf("boot in %s: role %q", bt.Region, bt.Role)
		case bt.Role == "candidate":
			candidates++
		}
	}
	if candidates == 0 {
		t.Error("no candidate booted outside the lost region")
	}
	for _, v := range rep.Verify {
		for _, r := range v.Replicas {
			if r.Status == "UNVERIFIED" || (v.Phase == "after" && (r.Status != "OK" || r.Mode != "deep")) {
				t.Errorf("verification %s of %s: %s %s (a copy of a store with no checksums is hashed, never left UNVERIFIED)", v.Phase, r.Region, r.Mode, r.Status)
			}
		}
	}
	for _, s := range rep.Steps {
		if s.Status != "passed" || strings.Contains(s.Detail, "UNVERIFIED") || strings.Contains(s.Detail, "from "+rep.Lost) {
			t.Errorf("step %s %s: %s", s.Name, s.Status, s.Detail)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !rep.Evidence.ApproveAll || !strings.Contains(string(md), "| Approvals | approved in advance by --approve-all") {
		t.Errorf("approvals: approve_all %v; report.md:\n%s", rep.Evidence.ApproveAll, md)
	}
	if !strings.Contains(string(md), "What it covers:** the traffic shift only") || !strings.Contains(string(html), "What it covers: the traffic shift only") {
		t.Errorf("the reports do not say what the recovery time covers:\n%s", md)
	}
	// raw and rendered alike: no backslash before what Markdown would not misread
	if m := regexp.MustCompile(`\\[()_.:\-]`).Find(md); m != nil {
		t.Errorf("report.md escapes %q, which no renderer misreads (a plain-text paste shows the backslash)", m)
	}
	if !strings.Contains(string(md), "(4m") || !strings.Contains(string(md), "to spare)") {
		t.Errorf("report.md's SLA line:\n%s", md)
	}
	ev := regexp.MustCompile(`(?s)<table class="evidence">.*?</table>`).Find(html)
	if ev == nil || strings.Contains(string(ev), "`") || !strings.Contains(string(ev), "<code>lifeboat drill history --fleet FLEET --verify DIR</code>") {
		t.Errorf("report.html's evidence shows code with backticks, or not as <code>:\n%s", ev)
	}
}

// docs/lint-rules.md's rule table gives every rule with the severity the binary gives it.
func TestLintRulesDocMatchesTheBinary(t *testing.T) {
	r := cli(t, nil, "manifest", "lint", "--list-rules", "-o", "json")
	var rules []struct{ ID, Severity string }
	if err := json.Unmarshal([]byte(r.stdout), &rules); err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| (error|warning)\\b")
	inDoc := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(readDoc(t, "docs/lint-rules.md"), -1) {
		inDoc[m[1]] = m[2]
	}
	for _, ru := range rules {
		if got, ok := inDoc[ru.ID]; !ok {
			t.Errorf("rule %s is not in docs/lint-rules.md's rule table", ru.ID)
		} else if got != ru.Severity {
			t.Errorf("rule %s: docs/lint-rules.md says %s, the binary %s", ru.ID, got, ru.Severity)
		}
	}
}

// The README is a front door, not the reference: under 400 lines, with the reference in docs/.
func TestReadmeIsAFrontDoor(t *testing.T) {
	doc := readDoc(t, "README.md")
	if n := strings.Count(doc, "\n"); n >= 400 {
		t.Errorf("README.md has %d lines; keep it under 400 and move reference material to docs/", n)
	}
	for _, job := range []string{"release gate", "drill", "failover", "make demo", "make test"} {
		if !strings.Contains(doc, job) {
			t.Errorf("README.md does not mention %q", job)
		}
	}
}

// Every docs/*.md file is linked from the README's index, so nothing written is unfindable.
func TestReadmeLinksEveryDocsFile(t *testing.T) {
	readme := readDoc(t, "README.md")
	linked := map[string]bool{}
	for _, l := range markdownLinks(readme) {
		target, _, _ := strings.Cut(l.target, "#")
		linked[filepath.Clean(target)] = true
	}
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rel := filepath.ToSlash(filepath.Join("docs", filepath.Base(f)))
		if !linked[rel] {
			t.Errorf("%s is not linked from README.md: add it to the list under \"## Documentation\"", rel)
		}
	}
}

// No broken link: every relative link in README.md, docs/ and examples/ names a file or
// directory that exists, and every #anchor a heading of the file it points into.
func TestDocsLinksResolve(t *testing.T) {
	var docs []string
	for _, root := range []string{"README.md", "docs", "examples"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, root), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".md") {
				docs = append(docs, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(p string) map[string]bool {
		if a, ok := anchors[p]; ok {
			return a
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		anchors[p] = headingAnchors(string(b))
		return anchors[p]
	}
	checked := 0
	for _, p := range docs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(repoRoot, p)
		for _, l := range markdownLinks(string(b)) {
			if regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(l.target) {
				continue // https:, mailto: — not checked offline
			}
			file, anchor, _ := strings.Cut(l.target, "#")
			dest := p
			if file != "" {
				dest = filepath.Join(filepath.Dir(p), filepath.FromSlash(file))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: broken link %q: %s does not exist", name, l.line, l.target, file)
					continue
				}
			}
			if anchor != "" {
				if a := anchorsOf(dest); a == nil || !a[anchor] {
					t.Errorf("%s:%d: broken link %q: no heading with the anchor #%s", name, l.line, l.target, anchor)
				}
			}
			checked++
		}
	}
	if checked < 50 {
		t.Fatalf("only %d links checked: the link parser lost them", checked)
	}
}

type mdLink struct {
	target string
	line   int
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// markdownLinks returns the inline links' targets outside fenced code blocks and code spans.
func markdownLinks(doc string) []mdLink {
	var links []mdLink
	fence := false
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(stripCodeSpans(line), -1) {
			links = append(links, mdLink{target: m[1], line: i + 1})
		}
	}
	return links
}

func stripCodeSpans(line string) string {
	var b strings.Builder
	in := false
	for _, r := range line {
		if r == '`' {
			in = !in
			continue
		}
		if !in {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// headingAnchors returns the anchors GitHub gives the document's headings: the text lower-cased,
// everything but letters, digits, spaces, '-' and '_' dropped, spaces made '-', and "-1", "-2"…
// added to repeats.
func headingAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(text, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(text)) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
