// redact keeps the bearer token (launch.APIKeySource) out of every result, log and error.

package warm

import (
	"strings"
)

// redact replaces every occurrence of the token in s: a replica's error text is a peer's, and a
// peer could echo what it was sent.
func redact(s, token string) string {
	if token == "" || !strings.Contains(s, token) {
		return s
	}
	return strings.ReplaceAll(s, token, "[redacted]")
}
