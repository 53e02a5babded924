package manifest_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"testing"

	"lifeboat/manifest"
)

// bigManifest is the sample manifest grown to n files: copies of a weight shard's layer under
// model/shards/, each with its own path, in path order — the size of a real large repository's
// manifest (thousands of files, mostly small), whose parse is on every verify's critical path.
func bigManifest(tb testing.TB, n int) []byte {
	tb.Helper()
	_, doc := sampleDoc(tb)
	layers := doc["layers"].([]any)
	shard := layerAt(tb, doc, "model/model-00001-of-00002.safetensors")
	for i := len(layers); i < n; i++ {
		l := maps.Clone(shard)
		a := maps.Clone(shard["annotations"].(map[string]any))
		a[manifest.AnnotationFilepath] = fmt.Sprintf("model/shards/shard-%05d.safetensors", i)
		l["annotations"] = a
		layers = append(layers, l)
	}
	path := func(l any) string {
		return l.(map[string]any)["annotations"].(map[string]any)[manifest.AnnotationFilepath].(string)
	}
	sort.Slice(layers, func(i, j int) bool { return path(layers[i]) < path(layers[j]) })
	doc["layers"] = layers
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	if m, err := manifest.Parse(b, "big.json"); err != nil || len(m.Files) != n {
		tb.Fatalf("the grown manifest: %v", err)
	}
	return b
}

func BenchmarkParse(b *testing.B) {
	for _, n := range []int{200, 5000} {
		data := bigManifest(b, n)
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := manifest.Parse(data, "big.json"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
