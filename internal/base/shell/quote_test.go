package shell_test

import (
	"os/exec"
	"testing"

	"lifeboat/internal/base/shell"
)

// TestQuote pins what Quote writes, and that a real shell reads each result back as the one
// word it was given.
func TestQuote(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "''"},
		{"fleet.yaml", "fleet.yaml"},
		{"eu-west-1", "eu-west-1"},
		{"s3://bucket/a,b+c@v=1:2", "s3://bucket/a,b+c@v=1:2"},
		{"my fleet.yaml", "'my fleet.yaml'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{"$HOME", "'$HOME'"},
		{"new\nline", "'new\nline'"},
		{"tab\there", "'tab\there'"},
		{"a;rm -rf x", "'a;rm -rf x'"},
		{"`id`", "'`id`'"},
		{`back\slash "dq"`, `'back\slash "dq"'`},
		{"~/x", "'~/x'"},
		{"*.yaml", "'*.yaml'"},
		{"{{.Port}}", "'{{.Port}}'"},
		{"café", "'café'"},
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no sh on PATH to read the quoted words back: %v", err)
	}
	for _, c := range cases {
		got := shell.Quote(c.in)
		if got != c.want {
			t.Errorf("Quote(%q) = %s, want %s", c.in, got, c.want)
		}
		// Two words after printf's format, so a split word would print "|" in the middle.
		out, err := exec.Command(sh, "-c", "printf '%s|' "+got+" end").Output()
		if err != nil {
			t.Errorf("sh -c printf %s: %v", got, err)
			continue
		}
		if want := c.in + "|end|"; string(out) != want {
			t.Errorf("sh read Quote(%q) = %s back as %q, want %q", c.in, got, out, want)
		}
	}
}
