package main

import "testing"

// TestPathTextQuotesWhatCouldForgeOutput: issue 9 item 5. A store key may hold C1 controls (CSI
// is U+009B), bidi overrides, newlines or spaces the key rules let through; text output quotes
// such a path so it cannot forge an "OK" line or colour a terminal. Plain paths print as is.
func TestPathTextQuotesWhatCouldForgeOutput(t *testing.T) {
	for in, want := range map[string]string{
		"model/config.json":       "model/config.json",
		"model/a\nOK     model/b": `"model/a\nOK     model/b"`,
		"model/\u009b31mred":      `"model/\u009b31mred"`,
		"model/\u202etxt.exe":     `"model/\u202etxt.exe"`,
		"model/with space.bin":    `"model/with space.bin"`,
		"model/caf\u00e9.json":    "model/caf\u00e9.json",
		`model/"quoted"`:          `"model/\"quoted\""`,
		"model/\x1b[32mOK\x1b[0m": `"model/\x1b[32mOK\x1b[0m"`,
	} {
		if got := pathText(in); got != want {
			t.Errorf("pathText(%q) = %s, want %s", in, got, want)
		}
	}
}
