package execlauncher

import (
	"testing"

	"lifeboat/internal/base/shell"
)

// splitWords is shell.Quote's inverse: any string quoted and split is itself again (boot writes
// its own path into a launch command with shell.Quote).
func TestSplitWordsReadsShellQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "/a b/it's", `back\slash`, `"dq"`, "{{.Port}}", "$HOME", "tab\there", "new\nline", "`tick`"} {
		words, err := splitWords(shell.Quote(s))
		if err != nil || len(words) != 1 || words[0] != s {
			t.Errorf("splitWords(shell.Quote(%q)) = %q, %v", s, words, err)
		}
	}
}
