package warm

import (
	"fmt"
	"net/url"
	"strings"
)

// NormalizeBaseURL checks that raw is an http(s) URL with a host and returns it without a
// trailing slash or "/v1" suffix.
func NormalizeBaseURL(raw string) (string, error) {
	if t := strings.TrimSpace(raw); t != "" && !strings.Contains(t, "://") {
		return "", fmt.Errorf("replica URL %q has no scheme: did you mean http://%s?", raw, t)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("replica URL %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("replica URL %q: want http://HOST:PORT or https://HOST:PORT", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("replica URL %q: no query or fragment expected", raw)
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/v1")
	u.Path = strings.TrimRight(p, "/")
	return u.String(), nil
}
