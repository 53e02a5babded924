package providers

import "lifeboat/internal/base/redact"

// The redaction helpers live in internal/base/redact (the ground floor, so that leaf helpers such
// as internal/base/kubeclient can use them); these names keep the product layers' call sites.

// Redacted replaces every secret Redact removes.
const Redacted = redact.Redacted

// SecretEnvName reports whether an environment variable's name says its value is a secret.
func SecretEnvName(name string) bool { return redact.SecretEnvName(name) }

// SecretFlagName reports whether a command-line flag's name says its value is a secret.
func SecretFlagName(flag string) bool { return redact.SecretFlagName(flag) }

// SecretFlagValues returns the values of the secret-named flags in argv.
func SecretFlagValues(argv []string) []string { return redact.SecretFlagValues(argv) }

// RedactValues replaces every occurrence of the given secret values in s.
func RedactValues(s string, values []string) string { return redact.RedactValues(s, values) }

// Redact replaces secret-looking values in s (see redact.Redact).
func Redact(s string) string { return redact.Redact(s) }

// RedactStream is Redact for text that may be URL- or form-encoded (see redact.RedactStream).
func RedactStream(s string) string { return redact.RedactStream(s) }

// RedactStrings redacts every string reachable from ptr in place (see redact.RedactStrings).
func RedactStrings(ptr any) { redact.RedactStrings(ptr) }

// TerminalSafe replaces terminal control sequences in s (see redact.TerminalSafe).
func TerminalSafe(s string) string { return redact.TerminalSafe(s) }

// Sanitize is the one helper for a string that came from a peer (see redact.Sanitize).
func Sanitize(s string, max int) string { return redact.Sanitize(s, max) }
