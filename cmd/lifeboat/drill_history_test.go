package main

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"lifeboat/drills"
)

var negSeconds = regexp.MustCompile(`-\d+(\.\d+)?s`)

// TestHistoryMarginAndWrapping: the trend table never shows a pass's margin as a negative number
// (time to spare, or time over for a miss), and however long the drill names and failure lists
// are, no line is wider than the terminal's width, with every failure still printed in full.
func TestHistoryMarginAndWrapping(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 6))
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var h []drills.HistoryEntry
	for i := range 200 {
		rto := float64(1 + rng.IntN(600))
		rec := rng.Float64() * rto * 2
		ok := rec <= rto
		e := drills.HistoryEntry{Drill: "lose-eu-west-1", Started: t0.Add(time.Duration(i) * time.Minute), RTOSeconds: rto, RecoverySeconds: &rec, OK: ok, Verdict: "PASS"}
		if !ok {
			e.Verdict = "FAIL"
			e.StepsFailed = []string{"evacuate"}
			e.ExpectFailed = []string{strings.Repeat("the eu-only class never leaves the EU and ", 1+rng.IntN(6)) + "end", "recovery time is within the SLA"}
		}
		if i%7 == 0 {
			e.Drill = strings.Repeat("a-very-long-drill-name-", 5)
		}
		h = append(h, e)
	}
	for _, width := range []int{60, 80, 120} {
		var b bytes.Buffer
		renderHistory(&b, h, width)
		lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
		header := lines[0]
		for _, l := range lines {
			if strings.HasPrefix(l, "    ") && utf8.RuneCountInString(l) > width {
				t.Fatalf("width %d: a failure line of %d runes: %q", width, utf8.RuneCountInString(l), l)
			}
			if strings.Contains(l, "PASS") && (negSeconds.MatchString(l) || !strings.Contains(l, "s spare")) {
				t.Fatalf("a pass shows a negative margin: %q", l)
			}
			if strings.HasPrefix(l, "2026") && utf8.RuneCountInString(l) > utf8.RuneCountInString(header)+2 {
				t.Fatalf("a row wider than its header (columns not cut):\n%s\n%s", header, l)
			}
		}
		// every failure is printed whole (wrapped, not cut)
		joined := strings.Join(strings.Fields(b.String()), " ")
		for _, e := range h {
			for _, x := range e.ExpectFailed {
				if !strings.Contains(joined, strings.Join(strings.Fields(x), " ")) {
					t.Fatalf("width %d: failure %q not printed whole", width, x)
				}
			}
		}
		if !strings.Contains(b.String(), "spare") || !strings.Contains(b.String(), "over") {
			t.Fatalf("no margin words:\n%s", b.String())
		}
	}
}
