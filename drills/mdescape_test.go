package drills

import "testing"

// report.md reads the same raw and rendered: a backslash only where a CommonMark/GFM renderer
// would read markup (issue 32: "\(4m59s to spare\)" showed its backslashes in a ticket).
func TestMarkdownEscapesOnlyMarkup(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"recovered in 1.08s, within the RTO of 5m0s (4m59s to spare)", "recovered in 1.08s, within the RTO of 5m0s (4m59s to spare)"},
		{"3 replica(s): 2 OK, 1 failed (eu-central-1); repaired 1 from us-east-1", "3 replica(s): 2 OK, 1 failed (eu-central-1); repaired 1 from us-east-1"},
		{"failback_dwell is 1s: step_interval, a.b-c! {x}", "failback_dwell is 1s: step_interval, a.b-c! {x}"},
		{"2 * 3 and a < b and R&D", "2 * 3 and a < b and R&D"},
		{"a|b", `a\|b`},
		{"<script>alert(1)</script>", `\<script>alert(1)\</script>`},
		{"&amp; &#60;", `\&amp; \&#60;`},
		{"[click](http://x) ![i](y) [a][b]", `[click\](http://x) ![i\](y) [a\][b]`},
		{"*bold* _it_ ~~gone~~", `\*bold\* \_it\_ \~\~gone\~\~`},
		{"`code`", "\\`code\\`"},
		{`C:\path a\*b end\`, `C:\path a\\\*b end\\`},
		{"line\nbreak", "line break"},
	} {
		if got := mdEscape(c.in); got != c.want {
			t.Errorf("mdEscape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// An evidence value's `backticked` command is code: a code span in report.md, <code> in the
// HTML, never a literal backtick.
func TestEvidenceCodeRendering(t *testing.T) {
	v := "digests are in SHA256SUMS: `lifeboat drill history --fleet F --verify D` checks them (a <b>)"
	if got, want := mdText(v, true), "digests are in SHA256SUMS: `lifeboat drill history --fleet F --verify D` checks them (a \\<b>)"; got != want {
		t.Errorf("mdText = %q, want %q", got, want)
	}
	if got, want := htmlText(v), "digests are in SHA256SUMS: <code>lifeboat drill history --fleet F --verify D</code> checks them (a &lt;b&gt;)"; got != want {
		t.Errorf("htmlText = %q, want %q", got, want)
	}
	if got, want := htmlText("one ` alone"), "one ` alone"; got != want {
		t.Errorf("htmlText of an unpaired backtick = %q, want %q", got, want)
	}
}
