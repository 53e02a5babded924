package drills

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"lifeboat/drills/junit"
	"lifeboat/failover"
	"lifeboat/providers"
	"lifeboat/providers/localfile"
)

// Report file names in the report directory.
const (
	ReportJSON  = "report.json"
	ReportMD    = "report.md"
	ReportHTML  = "report.html"
	ReportJUnit = "junit.xml"
)

// WriteReports writes report.json, report.md, report.html and junit.xml into dir (created if
// missing), each replaced atomically, then SHA256SUMS listing their digests. It returns the
// digests (for the history: see AppendHistory and VerifyReports).
func WriteReports(dir string, rep *Report) (ReportDigests, error) {
	// Created by us (0700), ours, writable by nobody else, not reached through a symbolic link:
	// another local user must not redirect or replace what root writes here.
	if err := localfile.PrepareDir(dir, "report directory"); err != nil {
		return nil, err
	}
	// Secrets are removed from the report's values; then each format's encoder is the last step
	// (encoding/json, mdEscape, esc/html.EscapeString, encoding/xml). Nothing rewrites the
	// finished files.
	providers.RedactStrings(rep)
	js, err := MarshalJSON(rep)
	if err != nil {
		return nil, err
	}
	var md, html, ju bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		return nil, err
	}
	if err := WriteHTML(&html, rep); err != nil {
		return nil, err
	}
	if err := junit.Write(&ju, JUnit(rep)); err != nil {
		return nil, err
	}
	files := map[string][]byte{ReportJSON: js, ReportMD: md.Bytes(), ReportHTML: html.Bytes(), ReportJUnit: ju.Bytes()}
	digests := ReportDigests{}
	for _, name := range reportFiles {
		clean := files[name]
		if err := writeFile(filepath.Join(dir, name), clean); err != nil {
			return nil, err
		}
		digests[name] = DigestBytes(name, clean).Digest
	}
	if err := writeFile(filepath.Join(dir, SumsFile), digests.sums()); err != nil {
		return nil, err
	}
	return digests, nil
}

func writeFile(path string, data []byte) error {
	if err := providers.WriteFileAtomic(path, 0o600, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// MarshalJSON renders report.json.
func MarshalJSON(rep *Report) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rep); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// JUnit renders the drill as JUnit: a case per step, per expected outcome, and the SLA.
func JUnit(rep *Report) junit.Suites {
	steps := junit.Suite{Name: "drill " + rep.Drill + ": steps", Time: fmt.Sprintf("%.3f", rep.Seconds)}
	for _, s := range rep.Steps {
		c := junit.Case{Name: s.Name, ClassName: "lifeboat.drill." + rep.Drill, Time: fmt.Sprintf("%.3f", s.Seconds)}
		switch s.Status {
		case Failed:
			c.Failure = &junit.Failure{Message: firstLine(s.Detail), Type: "step failed", Text: s.Detail}
			steps.Failures++
		case Inconclusive:
			c.Failure = &junit.Failure{Message: firstLine(s.Detail), Type: "step inconclusive (not a pass)", Text: s.Detail}
			steps.Failures++
		case Skipped:
			c.Skipped = &junit.Skip{Message: s.Detail}
			steps.Skipped++
		default:
			c.SystemOut = s.Detail
		}
		steps.Cases = append(steps.Cases, c)
		steps.Tests++
	}
	exp := junit.Suite{Name: "drill " + rep.Drill + ": expected outcomes"}
	sla := junit.Case{Name: "recovery within the SLA (RTO " + fmt.Sprintf("%gs", rep.SLA.RTOSeconds) + ")", ClassName: "lifeboat.drill." + rep.Drill, SystemOut: rep.SLA.Detail}
	if !rep.SLA.Met {
		sla.Failure = &junit.Failure{Message: rep.SLA.Detail, Type: "SLA missed", Text: rep.SLA.Detail}
		exp.Failures++
	}
	exp.Cases = append(exp.Cases, sla)
	exp.Tests++
	for _, e := range rep.Expect {
		c := junit.Case{Name: e.Description, ClassName: "lifeboat.drill." + rep.Drill, SystemOut: e.Evidence}
		if !e.Met {
			c.Failure = &junit.Failure{Message: e.Evidence, Type: "expectation not met", Text: e.Evidence}
			exp.Failures++
		}
		exp.Cases = append(exp.Cases, c)
		exp.Tests++
	}
	var props []junit.Property
	for _, e := range rep.EvidenceRows() {
		props = append(props, junit.Property{Name: e.Key, Value: e.Value})
	}
	steps.Properties, exp.Properties = props, props
	return junit.Suites{Name: "lifeboat drill " + rep.Drill, Time: fmt.Sprintf("%.3f", rep.Seconds), Suites: []junit.Suite{steps, exp}}
}

// mdEscape is the Markdown encoder of every value in report.md: one line (newlines and other
// controls become spaces, providers.Sanitize's rule), and a backslash only before what a
// CommonMark or GFM renderer would really read as markup — a table pipe, a backtick, a tag's <,
// an entity's &, the ]( or ][ of a link or image, emphasis or strikethrough delimiters that touch
// a word, a backslash before punctuation or at the end — so that the file reads the same raw (a
// plain-text ticket) as rendered: "(4m59s to spare)" stays as it is.
func mdEscape(s string) string {
	rs := []rune(oneLine(s))
	at := func(i int) rune {
		if i < 0 || i >= len(rs) {
			return ' '
		}
		return rs[i]
	}
	var b strings.Builder
	for i, r := range rs {
		prev, next := at(i-1), at(i+1)
		esc := false
		switch r {
		case '|', '`':
			esc = true
		case '\\':
			esc = i == len(rs)-1 || (next < 128 && (unicode.IsPunct(next) || unicode.IsSymbol(next)))
		case '<':
			esc = unicode.IsLetter(next) || strings.ContainsRune("/!?", next)
		case '&':
			esc = entity.MatchString(string(rs[i:]))
		case ']':
			esc = next == '(' || next == '['
		case '*', '~':
			esc = !unicode.IsSpace(prev) || !unicode.IsSpace(next)
		case '_':
			esc = !(isWordRune(prev) && isWordRune(next)) && (!unicode.IsSpace(prev) || !unicode.IsSpace(next)) // intraword _ is no emphasis in GFM
		}
		if esc {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// entity matches the start of an HTML entity or character reference.
var entity = regexp.MustCompile(`^&#?[A-Za-z0-9]+;`)

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// mdText is a value whose `backticked` parts are code (EvidenceRow values): those become code
// spans, the rest mdEscape'd.
func mdText(s string, cell bool) string {
	var b strings.Builder
	for _, seg := range codeSegments(s) {
		if seg.code {
			b.WriteString(mdCode(seg.text, cell))
		} else {
			b.WriteString(mdEscape(seg.text))
		}
	}
	return b.String()
}

// segment is a run of plain text or of code in a value.
type segment struct {
	text string
	code bool
}

// codeSegments splits s at its backticks: the parts between a pair are code; an unpaired
// backtick is text.
func codeSegments(s string) []segment {
	var out []segment
	for s != "" {
		i := strings.IndexByte(s, '`')
		j := -1
		if i >= 0 {
			j = strings.IndexByte(s[i+1:], '`')
		}
		if i < 0 || j < 0 {
			out = append(out, segment{s, false})
			break
		}
		if i > 0 {
			out = append(out, segment{s[:i], false})
		}
		out = append(out, segment{s[i+1 : i+1+j], true})
		s = s[i+2+j:]
	}
	return out
}

// mdCode is a value as a Markdown code span: a fence longer than any run of backticks in it,
// padded when it starts or ends with one; in a table cell | is escaped (GFM reads \| there).
func mdCode(s string, cell bool) string {
	s = oneLine(s)
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	if cell {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || s == "" {
		s = " " + s + " "
	}
	return fence + s + fence
}

// oneLine is s on one line with no control character (a space for each run of them).
func oneLine(s string) string {
	var b strings.Builder
	for _, r := range providers.TerminalSafe(s) {
		if r == '\n' || r == '\t' || r == '\r' || r == utf8.RuneError {
			r = ' '
		}
		b.WriteRune(r)
	}
	return b.String()
}

func mark(ok bool) string {
	if ok {
		return "✅"
	}
	return "❌"
}

// WriteMarkdown renders report.md: what a person pastes into a post-mortem or an audit ticket.
func WriteMarkdown(w *bytes.Buffer, rep *Report) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("# DR drill %s: %s\n\n", mdCode(rep.Drill, false), mdEscape(rep.Verdict))
	p("- **Model:** %s — **lost region:** %s — **router:** %s\n", mdEscape(rep.Model), mdEscape(rep.Lost), mdEscape(rep.Router))
	p("- **When:** %s to %s (%.1f s)\n", rep.Started.Format("2006-01-02 15:04:05 MST"), rep.Finished.Format("15:04:05 MST"), rep.Seconds)
	rec := "not measured"
	if rep.SLA.RecoverySeconds != nil {
		rec = fmt.Sprintf("%.2f s", *rep.SLA.RecoverySeconds)
	}
	p("- **Recovery time:** **%s** against an RTO of %g s — %s %s\n", rec, rep.SLA.RTOSeconds, mark(rep.SLA.Met), mdEscape(rep.SLA.Detail))
	p("- **What it covers:** %s\n", mdEscape(RecoveryCovers))
	p("- **Summary:** %s\n\n", mdEscape(rep.Summary))
	p("## Evidence\n\n| | |\n|---|---|\n")
	for _, e := range rep.EvidenceRows() {
		p("| %s | %s |\n", mdEscape(e.Label), mdText(e.Value, true))
	}
	p("\n")
	p("## Steps\n\n| step | status | started at | took | detail |\n|---|---|---|---|---|\n")
	for _, s := range rep.Steps {
		p("| %s | %s | %+.2f s | %.2f s | %s |\n", mdEscape(s.Name), mdEscape(s.Status), s.Offset, s.Seconds, mdEscape(s.Detail))
	}
	if len(rep.Faults) > 0 {
		p("\n## Injected faults\n\n| | fault | injected | at | detected | evidence |\n|---|---|---|---|---|---|\n")
		for i, f := range rep.Faults {
			p("| F%d | %s | %s | %s | %s | %s |\n", i+1, mdEscape(f.Name), mark(f.Injected), atOffset(f.At), mark(f.Detected), mdEscape(f.Evidence))
		}
	}
	p("\n## Expected outcomes\n\n| expectation | met | evidence |\n|---|---|---|\n")
	for _, e := range rep.Expect {
		p("| %s | %s | %s |\n", mdEscape(e.Description), mark(e.Met), mdEscape(e.Evidence))
	}
	for _, v := range rep.Verify {
		p("\n## Verification (%s)\n\n| region | replica | mode | status | problems |\n|---|---|---|---|---|\n", mdEscape(v.Phase))
		for _, r := range v.Replicas {
			probs := strings.Join(r.Problems, ", ")
			if r.Error != "" {
				probs = strings.TrimPrefix(probs+"; "+r.Error, "; ")
			}
			p("| %s | %s | %s | %s | %s |\n", mdEscape(r.Region), mdCode(r.URL, true), mdEscape(r.Mode), mdEscape(r.Status), mdEscape(probs))
		}
	}
	for _, r := range rep.Repairs {
		p("\n- repaired %s from %s: %s, %d file(s) copied %s\n", mdEscape(r.Region), mdEscape(r.From), mdEscape(r.Status), r.Copied, mdEscape(r.Detail))
	}
	if len(rep.Boots) > 0 {
		p("\n## Candidates booted\n\n| region | role | verdict | warm after | probe TTFT | reason |\n|---|---|---|---|---|---|\n")
		for _, b := range rep.Boots {
			p("| %s | %s | %s | %s | %s | %s |\n", mdEscape(b.Region), mdEscape(bootRole(b)), mdEscape(b.Verdict), fsec(b.WarmS, "s"), fmsec(b.TTFTS), mdEscape(b.Reason))
		}
	}
	if len(rep.Classes) > 0 {
		p("\n## Traffic per tenant class\n\n| class | eligible | requests | failed | outside eligible | landed | TTFT p50 | TTFT max |\n|---|---|---|---|---|---|---|---|\n")
		for _, c := range rep.Classes {
			p("| %s | %s | %d | %d | %d | %s | %.1f ms | %.1f ms |\n", mdEscape(c.Class), mdEscape(strings.Join(c.Eligible, ", ")), c.Requests, c.Failed, c.Outside, mdEscape(regionCounts(c.ByRegion)), c.TTFTP50MS, c.TTFTMaxMS)
		}
	}
	if failed := failedRequests(rep); len(failed) > 0 {
		p("\n## Failed requests\n\n| at | phase | class | region | via | reason |\n|---|---|---|---|---|---|\n")
		for i, r := range failed {
			if i == maxFailedShown {
				p("\n… and %d more (every request is in report.json).\n", len(failed)-maxFailedShown)
				break
			}
			p("| %+.2f s | %s | %s | %s | %s | %s |\n", r.Offset, r.Phase, mdEscape(r.Class), mdEscape(orDash(r.Region)), mdEscape(orDash(r.Via)), mdEscape(r.Error))
		}
	}
	if len(rep.StopChecks) > 0 {
		p("\n## Stop conditions\n\nEvaluated before each ramp and fail-back write.\n\n| time | before step | condition | result | why | query |\n|---|---|---|---|---|---|\n")
		for _, c := range rep.StopChecks {
			step, name, res := stopRow(c)
			p("| %s | %s | %s | %s | %s | %s |\n", c.Time.Format("15:04:05"), step, mdEscape(name), res, mdEscape(c.Why), mdCode(c.Query, true))
		}
	}
	td := rep.Teardown
	left := "nothing"
	if len(td.Left) > 0 {
		left = strings.Join(td.Left, ", ")
	}
	p("\n## Teardown\n\nStopped %d candidate(s) (%s); faults put back: %s; temp dir removed: %v; lock released: %v; left behind: %s.\n",
		len(td.Stopped), mdEscape(strings.Join(td.Stopped, ", ")), mdEscape(orNone(td.FaultsUndone)), td.TempRemoved, td.LockReleased, mdEscape(left))
	if len(rep.Runs) > 0 {
		runs := make([]string, len(rep.Runs))
		for i, r := range rep.Runs {
			runs[i] = mdCode(r, false)
		}
		p("\nFailover journal runs: %s.\n", strings.Join(runs, ", "))
	}
	return nil
}

// stopRow is a stop condition's evaluation as the reports' tables say it: the step it
// preceded (1-based), the condition (and region) and the result.
func stopRow(c failover.StopResult) (step, name, res string) {
	step, name, res = "—", c.Name, "pass"
	if c.Step != nil {
		step = fmt.Sprint(*c.Step + 1)
	}
	if c.Region != "" {
		name += " (" + c.Region + ")"
	}
	switch {
	case c.Overridden:
		res = "overridden"
	case c.Pass:
	case c.DryRun:
		res = "FAIL (dry run)"
	default:
		res = "HOLD"
	}
	return step, name, res
}

// maxFailedShown bounds the failed requests listed in report.md and report.html.
const maxFailedShown = 100

func failedRequests(rep *Report) []Request {
	var out []Request
	for _, r := range rep.Requests {
		if !r.OK {
			out = append(out, r)
		}
	}
	return out
}

// bootRole says what a boot was for: a candidate, or the lost region's stand-in and its source.
func bootRole(b BootSummary) string {
	if b.Role == RoleStandIn {
		return "stand-in for the lost region, restored from " + b.From + "'s replica"
	}
	return RoleCandidate
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func fsec(v *float64, unit string) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f %s", *v, unit)
}

func fmsec(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f ms", *v*1000)
}

// Schema is report.schema.json, the JSON Schema of report.json.
//
//go:embed report.schema.json
var Schema []byte
