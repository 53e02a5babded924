// The bearer token a vLLM started with --api-key (or VLLM_API_KEY) wants: where it comes from
// (an environment variable or a file the fleet names, never a value on a command line), read in
// Lifeboat's own process at the probe's start, and kept out of every result, log and error.

package launch

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"lifeboat/providers/localfile"
)

// MaxAPIKeyFileBytes bounds an api_key_file: a token is a line, not a document.
const MaxAPIKeyFileBytes = 64 << 10

// APIKeySource names where the replica's bearer token is read: the environment variable Env of
// Lifeboat's own process, or the file File (its content, surrounding white space trimmed). At
// most one is set; both empty means the replica wants no token. It holds the source's name only,
// so it may be printed and written to JSON: the token itself lives in the prober while it runs.
type APIKeySource struct {
	Env  string `json:"api_key_env,omitempty"`
	File string `json:"api_key_file,omitempty"`
}

// IsZero reports whether no token is configured.
func (s APIKeySource) IsZero() bool { return s.Env == "" && s.File == "" }

// String names the source, never the token: "env VLLM_API_KEY", "file /run/secrets/vllm".
func (s APIKeySource) String() string {
	switch {
	case s.Env != "":
		return "env " + s.Env
	case s.File != "":
		return "file " + s.File
	}
	return "no api key"
}

// ErrAPIKey marks a token source that gives no usable token (unset, empty, unreadable, or a
// value no HTTP header can carry).
var ErrAPIKey = errors.New("api key")

// Token reads the token. An unset or empty variable, a file that cannot be read (or is not a
// regular file of at most MaxAPIKeyFileBytes), and a token with white space or control
// characters inside are errors that name the source, never any of its content.
func (s APIKeySource) Token() (string, error) {
	var raw string
	switch {
	case s.Env != "" && s.File != "":
		return "", fmt.Errorf("%w: both api_key_env and api_key_file are set; name one", ErrAPIKey)
	case s.Env != "":
		v, ok := os.LookupEnv(s.Env)
		if !ok {
			return "", fmt.Errorf("%w: environment variable %s is not set", ErrAPIKey, s.Env)
		}
		raw = v
	case s.File != "":
		b, err := localfile.ReadFile(s.File, MaxAPIKeyFileBytes)
		if err != nil {
			// localfile's errors name the file and what is wrong with it, never its bytes
			return "", fmt.Errorf("%w: %w", ErrAPIKey, err)
		}
		raw = string(b)
	default:
		return "", nil
	}
	tok := strings.TrimSpace(raw)
	if tok == "" {
		return "", fmt.Errorf("%w: %s is empty", ErrAPIKey, s)
	}
	for _, r := range tok {
		if r <= ' ' || r == 0x7f {
			return "", fmt.Errorf("%w: %s holds white space or a control character inside the token (one token, on one line)", ErrAPIKey, s)
		}
	}
	return tok, nil
}
