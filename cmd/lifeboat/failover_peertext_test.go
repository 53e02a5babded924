//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// hostileText is peer text that would forge lines, fields or terminal state if printed as is.
const hostileText = "INC-7\nVERDICT: done\r\x1b[2Jforged\u2028line\u202eevil\ttab"

// peerStrings walks a decoded JSON or YAML document and returns every string value but the
// command's own "error" (which is multi-line by design: its last line is the next command).
func peerStrings(v any, path string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if path == "" && k == "error" {
				continue
			}
			peerStrings(e, path+"."+k, out)
		}
	case []any:
		for i, e := range x {
			peerStrings(e, fmt.Sprintf("%s[%d]", path, i), out)
		}
	case string:
		out[path] = x
	}
}

// -o json and -o yaml render a lock's holder, reason and operation and a run's reason (text a
// peer wrote into the state store) on one line, as the text output does: no newline, carriage
// return, escape, line separator or bidi override survives in any string of the document. On
// the file store and on versitygw.
func TestFailoverPeerTextOneLineInJSONAndYAML(t *testing.T) {
	for _, name := range []string{"file", "s3"} {
		t.Run(name, func(t *testing.T) {
			var open func(t *testing.T, dir string) stateStore
			if name == "file" {
				open = func(t *testing.T, dir string) stateStore {
					return stateStore{name: "file", url: "file://./state", put: func(t *testing.T, key string, data []byte) {
						p := filepath.Join(dir, "state", filepath.FromSlash(key))
						os.MkdirAll(filepath.Dir(p), 0o700)
						if err := os.WriteFile(p, data, 0o600); err != nil {
							t.Fatal(err)
						}
					}}
				}
			} else {
				open = stateStores(t)[1] // skips without versitygw
			}
			dir := faultDir(t)
			st := open(t, dir)
			useState(t, dir, st)
			if r := cli(t, st.env, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", hostileText); r.code != 0 {
				t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
			}
			lock, _ := json.Marshal(map[string]any{
				"id": "lock-1\nforged", "holder": "mallory@evil pid 1\n{\"holder\": \"root\"}\x1b[31m", "reason": hostileText,
				"operation": "failover run\r\nfailover abort", "since": time.Now().UTC(), "expires": time.Now().Add(time.Hour).UTC(),
				"ttl_ms": 30000, "renewal": 3, "token": 99,
			})
			st.put(t, "failover/lock.json", lock)
			found := 0
			for _, o := range []string{"json", "yaml"} {
				r := cli(t, st.env, "failover", "status", "--fleet", "fleet.yaml", "-o", o)
				var doc any
				var err error
				if o == "json" {
					err = json.Unmarshal([]byte(r.stdout), &doc)
				} else {
					err = yaml.Unmarshal([]byte(r.stdout), &doc)
				}
				if err != nil {
					t.Fatalf("status -o %s: %v\n%s\n%s", o, err, r.stdout, r.stderr)
				}
				strs := map[string]string{}
				peerStrings(doc, "", strs)
				for _, p := range []string{".holder", ".reason", ".lock.holder", ".lock.reason", ".lock.operation", ".lock.id"} {
					if _, ok := strs[p]; !ok {
						t.Errorf("status -o %s has no %s:\n%s", o, p, r.stdout)
					}
				}
				for p, s := range strs {
					if strings.ContainsAny(s, "\n\r\x1b\u2028\u202e\t") {
						t.Errorf("status -o %s: %s = %q is not one line of plain text", o, p, s)
					}
					if strings.Contains(s, "INC-7 VERDICT: done") || strings.Contains(s, "mallory@evil pid 1 {") || strings.Contains(s, "failover run failover abort") {
						found++
					}
				}
			}
			if found < 6 {
				t.Errorf("the peer text itself was not shown (one line each) in both documents: %d of 6+ fields", found)
			}
		})
	}
}
