package manifest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode"

	"lifeboat/manifest"
)

// sampleDoc is testdata/sample-manifest.json decoded, to be mutated by a test.
func sampleDoc(t testing.TB) (raw []byte, doc map[string]any) {
	t.Helper()
	raw, err := os.ReadFile("testdata/sample-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return raw, doc
}

// layerAt finds the layer of a bundle path in a decoded manifest.
func layerAt(t testing.TB, doc map[string]any, path string) map[string]any {
	t.Helper()
	for _, l := range doc["layers"].([]any) {
		lm := l.(map[string]any)
		if lm["annotations"].(map[string]any)[manifest.AnnotationFilepath] == path {
			return lm
		}
	}
	t.Fatalf("sample manifest has no layer %s", path)
	return nil
}

func setPath(t testing.TB, doc map[string]any, from, to string) {
	layerAt(t, doc, from)["annotations"].(map[string]any)[manifest.AnnotationFilepath] = to
}

// TestParseRefusesWhatProvesNothing: every manifest the audit of issue 9 found accepted — one
// that lists nothing, lacks the model config, carries digests that panicked the reader, repeats
// JSON keys, invents roles, embeds a weight file's or tokenizer's bytes (or model config bytes
// that are not the file's), hides control characters in paths, or
// has paths that collide on a real file system — is refused at parse time, naming the field.
func TestParseRefusesWhatProvesNothing(t *testing.T) {
	raw, _ := sampleDoc(t)
	if _, err := manifest.Parse(raw, "dr/manifest.json"); err != nil {
		t.Fatalf("the sample itself is refused: %v", err)
	}
	mutate := func(f func(doc map[string]any)) []byte {
		_, doc := sampleDoc(t)
		f(doc)
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rawReplace := func(old, new string) []byte {
		if !bytes.Contains(raw, []byte(old)) {
			t.Fatalf("sample has no %q", old)
		}
		return bytes.Replace(raw, []byte(old), []byte(new), 1)
	}
	embedded := []byte("{\"a\":1}")
	sum := sha256.Sum256(embedded)
	cases := map[string]struct {
		data []byte
		want string
	}{
		"layers empty":    {mutate(func(d map[string]any) { d["layers"] = []any{} }), "layers: empty"},
		"layers null":     {mutate(func(d map[string]any) { d["layers"] = nil }), "layers: empty"},
		"layers missing":  {mutate(func(d map[string]any) { delete(d, "layers") }), "layers: empty"},
		"no model config": {mutate(func(d map[string]any) { setPath(t, d, "model/config.json", "model/config.jsonx") }), "no model/config.json"},
		"digest no alg": {mutate(func(d map[string]any) {
			layerAt(t, d, "model/README.md")["digest"] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		}), "not sha256"},
		"digest empty":        {mutate(func(d map[string]any) { layerAt(t, d, "model/README.md")["digest"] = "" }), "not sha256"},
		"digest missing":      {mutate(func(d map[string]any) { delete(layerAt(t, d, "model/README.md"), "digest") }), "not sha256"},
		"config digest empty": {mutate(func(d map[string]any) { d["config"].(map[string]any)["digest"] = "sha256" }), "config: digest"},
		"digest md5": {mutate(func(d map[string]any) {
			layerAt(t, d, "model/README.md")["digest"] = "md5:0123456789abcdef0123456789abcdef"
		}), "not sha256"},
		"duplicate top key": {rawReplace(`"schemaVersion": 2,`, `"schemaVersion": 2, "schemaVersion": 2,`), `schemaVersion: key "schemaVersion" appears twice`},
		"duplicate annotation": {rawReplace(`"org.cncf.model.filepath": "model/README.md"`,
			`"org.cncf.model.filepath": "model/README.md", "org.cncf.model.filepath": "model/evil"`), "appears twice"},
		"unknown role": {mutate(func(d map[string]any) {
			layerAt(t, d, "model/README.md")["annotations"].(map[string]any)[manifest.AnnotationRole] = "rootkit"
		}), `"rootkit"`},
		"data on a weight": {mutate(func(d map[string]any) {
			l := layerAt(t, d, "model/model-00001-of-00002.safetensors")
			l["data"], l["size"], l["digest"] = base64.StdEncoding.EncodeToString(embedded), len(embedded), "sha256:"+hex.EncodeToString(sum[:])
		}), "never embedded"},
		"data on a tokenizer": {mutate(func(d map[string]any) {
			l := layerAt(t, d, "model/tokenizer.json")
			l["data"], l["size"], l["digest"] = base64.StdEncoding.EncodeToString(embedded), len(embedded), "sha256:"+hex.EncodeToString(sum[:])
		}), "never embedded"},
		"model config data not its digest": {mutate(func(d map[string]any) {
			l := layerAt(t, d, "model/config.json")
			l["data"], l["size"] = base64.StdEncoding.EncodeToString(embedded), len(embedded)
		}), "does not match digest"},
		"model config data over the cap": {mutate(func(d map[string]any) {
			big := bytes.Repeat([]byte(" "), manifest.ModelConfigEmbedLimit+1)
			bs := sha256.Sum256(big)
			l := layerAt(t, d, "model/config.json")
			l["data"], l["size"], l["digest"] = base64.StdEncoding.EncodeToString(big), len(big), "sha256:"+hex.EncodeToString(bs[:])
		}), "more than the"},
		"newline in path":   {mutate(func(d map[string]any) { setPath(t, d, "model/README.md", "model/README.md\nOK   model/x") }), "control"},
		"ansi in path":      {mutate(func(d map[string]any) { setPath(t, d, "model/README.md", "model/\x1b[32mOK\x1b[0m") }), "control"},
		"c1 in path":        {mutate(func(d map[string]any) { setPath(t, d, "model/README.md", "model/\u0085README.md") }), "control"},
		"del in path":       {mutate(func(d map[string]any) { setPath(t, d, "model/README.md", "model/README\x7f.md") }), "control"},
		"bidi in path":      {mutate(func(d map[string]any) { setPath(t, d, "model/README.md", "model/\u202edm.EMDAER") }), "format"},
		"invalid utf8 path": {rawReplace(`"model/README.md"`, "\"model/README\xff.md\""), "UTF-8"},
		"file and dir": {mutate(func(d map[string]any) {
			setPath(t, d, "model/generation_config.json", "model/loras")
		}), `runs through "model/loras"`},
		"case collision": {mutate(func(d map[string]any) { setPath(t, d, "model/README.md", "model/Config.json") }), "collides"},
		"nfd collision": {mutate(func(d map[string]any) {
			setPath(t, d, "model/generation_config.json", "model/de\u0301")
			delete(layerAt(t, d, "model/loras/sql-lora/adapter_config.json"), "data") // a name it is not embedded under
			setPath(t, d, "model/loras/sql-lora/adapter_config.json", "model/d\u00e9")
		}), "collides"},
		"case collision of a dir": {mutate(func(d map[string]any) {
			setPath(t, d, "model/README.md", "model/Loras")
		}), `runs through "model/Loras"`},
	}
	// A small model config may be embedded (manifest diff shows its settings): bytes that match
	// its digest are accepted and kept.
	ok := mutate(func(d map[string]any) {
		l := layerAt(t, d, "model/config.json")
		l["data"], l["size"], l["digest"] = base64.StdEncoding.EncodeToString(embedded), len(embedded), "sha256:"+hex.EncodeToString(sum[:])
	})
	if m, err := manifest.Parse(ok, "dr/manifest.json"); err != nil {
		t.Errorf("embedded model config refused: %v", err)
	} else if f, _ := m.File("model/config.json"); !bytes.Equal(f.Data, embedded) {
		t.Errorf("embedded model config not kept: %q", f.Data)
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m, err := manifest.Parse(c.data, "dr/manifest.json")
			if err == nil {
				t.Fatalf("accepted (%d files)", len(m.Files))
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "dr/manifest.json: ") {
				t.Fatalf("error %q does not name the file and %q", err, c.want)
			}
		})
	}
}

// FuzzLayerPathDigest puts arbitrary paths and digests into a real manifest's layer: Parse never
// panics, and every path it accepts is clean, printable and collision-free.
// Seeds: testdata/fuzz/FuzzLayerPathDigest.
func FuzzLayerPathDigest(f *testing.F) {
	f.Add("model/README.md", "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	f.Fuzz(func(t *testing.T, path, dgst string) {
		_, doc := sampleDoc(t)
		l := layerAt(t, doc, "model/README.md")
		l["annotations"].(map[string]any)[manifest.AnnotationFilepath] = path
		l["digest"] = dgst
		data, err := json.Marshal(doc)
		if err != nil {
			return
		}
		m, err := manifest.Parse(data, "fuzz.json")
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, fl := range m.Files {
			for _, r := range fl.Path {
				if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\\' || r == unicode.ReplacementChar {
					t.Fatalf("accepted path %q holds %U", fl.Path, r)
				}
			}
			for _, el := range strings.Split(fl.Path, "/") {
				if el == "" || el == "." || el == ".." {
					t.Fatalf("accepted path %q has element %q", fl.Path, el)
				}
			}
			k := strings.ToLower(fl.Path)
			if seen[k] {
				t.Fatalf("accepted colliding path %q", fl.Path)
			}
			seen[k] = true
			if fl.Digest.Validate() != nil || len(fl.Sums.SHA256) != 64 {
				t.Fatalf("accepted digest %q", fl.Digest)
			}
		}
	})
}
