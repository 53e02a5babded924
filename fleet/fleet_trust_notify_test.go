package fleet_test

import (
	"os"
	"strings"
	"testing"

	"lifeboat/fleet"
)

// The trust: and notify: seeds (testdata/fleet/trust-*.yaml, notify-*.yaml, also FuzzParseFleet's
// corpus) are accepted when well-formed, and each malformed field is named with the file, its line
// and its path in the file, once.
func TestFleetTrustNotifySeeds(t *testing.T) {
	for _, c := range []struct {
		seed string
		want []string // each a problem the error must carry; none: accepted
	}{
		{"trust-inline.yaml", nil},
		{"notify-ok.yaml", nil},
		{"trust-bad-keys.yaml", []string{
			"dir/fleet.yaml:6: trust.keys[0]: inline PEM: not a PEM public key",
			"dir/fleet.yaml:10: trust.keys[1]: inline PEM: is a private key",
			`dir/fleet.yaml:11: trust.keys[2]: want a local PEM public key file, got the URL "https://keys.example/release.pub"`,
			"dir/fleet.yaml:12: trust.keys[3]: must not be empty",
			"dir/fleet.yaml:13: trust.keys[4]: want a string, got a mapping",
			`dir/fleet.yaml:14: trust.require: want true or false, got "maybe"`,
			"dir/fleet.yaml:15: trust.extra: unknown key",
		}},
		{"trust-files.yaml", []string{"dir/fleet.yaml:5: trust.keys[0]: public key: open dir/keys/release.pub", "trust.keys[1]: public key: open /abs/keys/release-2027.pub"}},
		{"trust-keys-not-list.yaml", []string{`dir/fleet.yaml:5: trust.keys: want a list of public key files (PEM), got "keys/release.pub"`}},
		{"trust-no-keys.yaml", []string{"dir/fleet.yaml:5: trust.keys: at least one accepted public key is required"}},
		{"trust-not-mapping.yaml", []string{"dir/fleet.yaml:4: trust: want a mapping, got a list"}},
		{"notify-bad.yaml", []string{
			"dir/fleet.yaml:5: notify[0].url: a webhook URL is a secret",
			`dir/fleet.yaml:6: notify[1].name: webhook "a" is named twice`,
			`dir/fleet.yaml:6: notify[1].url_env: want the name of an environment variable, got "lower-case var"`,
			`dir/fleet.yaml:6: notify[1].format: want slack or json, got "teams"`,
			`dir/fleet.yaml:7: notify[2].events[1]: unknown event "explode"`,
			"dir/fleet.yaml:7: notify[2].events[3]: want a string, got a mapping",
			"dir/fleet.yaml:7: notify[2]: give one of url_env and url_file, not both",
			"dir/fleet.yaml:8: notify[3].timeout: at most 30s",
			"dir/fleet.yaml:8: notify[3]: url_env: VAR or url_file: PATH is required",
			"dir/fleet.yaml:9: notify[4].format: required: slack",
			`dir/fleet.yaml:10: notify[5].url_file: want a local path, got the URL "s3://bucket/hook"`,
			`dir/fleet.yaml:10: notify[5].timeout: want a positive duration`,
			`dir/fleet.yaml:11: notify[6]: want a mapping, got "just a string"`,
			"dir/fleet.yaml:12: notify[7]: want a mapping, got a list",
			`dir/fleet.yaml:13: notify[8].events: want a list of event kinds, got "start"`,
		}},
		{"notify-not-list.yaml", []string{"dir/fleet.yaml:4: notify: want a list of webhooks"}},
		{"notify-edge.yaml", []string{
			"dir/fleet.yaml:5: notify[0].url_file: path contains a NUL byte",
			"dir/fleet.yaml:6: notify[1].url_env: must not be empty",
			`dir/fleet.yaml:7: notify[2].timeout: want a positive duration such as 60s or 30m, got "0s"`,
			"dir/fleet.yaml:7: notify[2].name: must not be empty",
			"dir/fleet.yaml:8: notify[3].events: an empty list tells of nothing: leave events out to be told of every kind",
		}},
	} {
		t.Run(c.seed, func(t *testing.T) {
			data, err := os.ReadFile("testdata/fleet/" + c.seed)
			if err != nil {
				t.Fatal(err)
			}
			f, err := fleet.Parse(data, "dir/fleet.yaml")
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if strings.HasPrefix(c.seed, "trust-") && (f.Trust == nil || len(f.Trust.Keys) != 2 || f.Trust.Require) {
					t.Fatalf("trust: %+v", f.Trust)
				}
				if strings.HasPrefix(c.seed, "notify-") && len(f.Notify) != 3 {
					t.Fatalf("notify: %+v", f.Notify)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if n := strings.Count(err.Error(), w); n != 1 {
					t.Errorf("%d× %q in:\n%v", n, w, err)
				}
			}
		})
	}
}
