package warm

import "testing"

// ShellQuote is splitWords' inverse: any string quoted and split is itself again.
func TestShellQuoteRoundTripsThroughSplitWords(t *testing.T) {
	for _, s := range []string{"", "plain", "/a b/it's", `back\slash`, `"dq"`, "{{.Port}}", "$HOME", "tab\there", "new\nline", "`tick`"} {
		words, err := splitWords(ShellQuote(s))
		if err != nil || len(words) != 1 || words[0] != s {
			t.Errorf("splitWords(ShellQuote(%q)) = %q, %v", s, words, err)
		}
	}
}
