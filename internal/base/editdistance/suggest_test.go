package editdistance

import (
	"slices"
	"testing"
)

// One ranking for every suggestion: distance, the abbreviation rule, the threshold, the order.
func TestSuggest(t *testing.T) {
	for _, c := range []struct {
		typed string
		names []string
		n     int
		want  []string
	}{
		{"rnu", []string{"run", "plan", "resume", "restore"}, 1, []string{"run"}},
		{"manfiest", []string{"manifest", "model", "fleet"}, 3, []string{"manifest"}},
		{"eu-wst-1", []string{"us-east-1", "eu-west-1", "eu-central-1"}, 3, []string{"eu-west-1"}},
		{"EU-WEST-1", []string{"eu-west-1"}, 1, []string{"eu-west-1"}}, // case is not a typo
		{"stat", []string{"status", "state"}, 2, []string{"state", "status"}},
		{"llama-3.1-8bb", []string{"llama-3.1-8b", "llama-3.1-70b", "qwen3-32b", "llama-3.1-8bb"}, 3, []string{"llama-3.1-8b", "llama-3.1-70b"}},
		{"kubernetes-gateway", []string{"file", "haproxy", "caddy", "http", "gateway-api"}, 1, nil},
		{"xy", []string{"ab", "x", "xyz"}, 3, []string{"x", "xyz"}},
		{"q", []string{"a", "b"}, 3, nil}, // never the whole of what was typed
		{"max-model-length", []string{"max-model-len", "max-num-seqs"}, 1, []string{"max-model-len"}},
	} {
		if got := Suggest(c.typed, c.names, c.n); !slices.Equal(got, c.want) {
			t.Errorf("Suggest(%q, %v, %d) = %q, want %q", c.typed, c.names, c.n, got, c.want)
		}
	}
	if got := Best("haproxi", []string{"file", "haproxy", "caddy"}); got != "haproxy" {
		t.Errorf("Best = %q", got)
	}
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"--fleet"}, "did you mean --fleet?"},
		{[]string{`"a"`, `"b"`}, `did you mean "a" or "b"?`},
		{[]string{"a", "b", "c"}, "did you mean a, b or c?"},
	} {
		if got := DidYouMean(c.in...); got != c.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
