//go:build integration

package file

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"lifeboat/fleet/router"
	"lifeboat/fleet/router/routertest"
)

var classes = map[string][]string{
	"eu-only": {"eu-west-1", "eu-central-1"},
	"global":  {"us-east-1", "eu-west-1", "ap-southeast-1"},
}

var start = router.RouterState{Weights: router.Weights{
	"eu-only": {"eu-west-1": 50, "eu-central-1": 50},
	"global":  {"us-east-1": 40, "eu-west-1": 30, "ap-southeast-1": 30},
}, States: router.States{}}

// edit changes the document as another program would: read, change, write in place.
func edit(t *testing.T, path string, change func(doc map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	change(doc)
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The file driver against a weights document in a temporary directory.
func TestConformance(t *testing.T) {
	routertest.Run(t, routertest.Harness{
		Name: "file",
		Open: func(t *testing.T) routertest.Setup {
			path := filepath.Join(t.TempDir(), "weights.json")
			d := &Router{Path: path}
			if err := d.Apply(t.Context(), start); err != nil {
				t.Fatal(err)
			}
			class := func(doc map[string]any, c string) map[string]any {
				return doc["classes"].(map[string]any)[c].(map[string]any)
			}
			return routertest.Setup{
				Driver: d, State: start, Classes: classes,
				Tamper: func(t *testing.T) {
					edit(t, path, func(doc map[string]any) {
						class(doc, "eu-only")["eu-west-1"] = map[string]any{"weight": 7, "state": "ready"}
					})
				},
				BreakTopology: func(t *testing.T) {
					edit(t, path, func(doc map[string]any) {
						class(doc, "eu-only")["us-east-1"] = map[string]any{"weight": 10, "state": "ready"}
					})
				},
			}
		},
		Skip: map[string]string{
			"unreachable": "a local file has no server that could stop answering",
			"stalled":     "a local file has no server that could stall",
		},
	})
}
