package manifest_test

import (
	"os"
	"path/filepath"
	"testing"

	"lifeboat/manifest"
)

// FuzzParse: the manifest reader never panics and either rejects the input with an error naming
// the file, or returns a manifest that re-marshals and re-parses to the same files.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.json")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"schemaVersion":2}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := manifest.Parse(data, "fuzz.json")
		if err != nil {
			return
		}
		out, err := m.Marshal()
		if err != nil {
			t.Fatalf("accepted manifest does not marshal: %v", err)
		}
		back, err := manifest.Parse(out, "again.json")
		if err != nil {
			t.Fatalf("re-parse of accepted manifest failed: %v", err)
		}
		if len(back.Files) != len(m.Files) {
			t.Fatalf("round trip changed the file count")
		}
	})
}
