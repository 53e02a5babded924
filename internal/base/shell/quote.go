package shell

import "strings"

// Quote returns s as one POSIX shell word: s itself when it is non-empty and only letters,
// digits and -_./:=@,+ (nothing a shell expands or splits), else s in single quotes, where each
// quote of s ends the quoting, is escaped and begins it again. A shell reading the result gets s
// back, whatever s holds.
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
