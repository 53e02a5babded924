package modelrepo

import (
	"strings"
	"testing"
)

func TestParseSafetensorsIndex(t *testing.T) {
	ix, err := ParseSafetensorsIndex([]byte(`{"metadata": {"total_size": 16060522496.0}, "weight_map": {"a": "model-00002-of-00002.safetensors", "b": "model-00001-of-00002.safetensors", "c": "model-00001-of-00002.safetensors"}}`), "idx.json")
	if err != nil {
		t.Fatal(err)
	}
	if !ix.HasTotalSize || ix.TotalSize != 16060522496 {
		t.Errorf("total size %d %v", ix.TotalSize, ix.HasTotalSize)
	}
	if got := strings.Join(ix.Shards(), ","); got != "model-00001-of-00002.safetensors,model-00002-of-00002.safetensors" {
		t.Errorf("shards %s", got)
	}
	if ix, err := ParseSafetensorsIndex([]byte(`{"weight_map": {"a": "m.safetensors"}}`), "idx.json"); err != nil || ix.HasTotalSize {
		t.Errorf("index without metadata: %v", err)
	}
	for _, tc := range []struct{ in, want string }{
		{`not json`, "idx.json: not a JSON object"},
		{`{}`, "field weight_map missing"},
		{`{"weight_map": []}`, "field weight_map: want an object"},
		{`{"weight_map": {}}`, "field weight_map is empty"},
		{`{"weight_map": {"a": 1}}`, `field weight_map["a"]: want a file name`},
		{`{"weight_map": {"a": "model.bin"}}`, "is not a .safetensors file"},
		{`{"weight_map": {"a": "../x.safetensors"}}`, "not a clean relative path"},
		{`{"weight_map": {"a": "/x.safetensors"}}`, "not a clean relative path"},
		{`{"weight_map": {"a": "d/./x.safetensors"}}`, "not a clean relative path"},
		{`{"metadata": [], "weight_map": {"a": "x.safetensors"}}`, "field metadata: want an object"},
		{`{"metadata": {"total_size": "1"}, "weight_map": {"a": "x.safetensors"}}`, "metadata: field total_size"},
		{`{"metadata": {"total_size": -1}, "weight_map": {"a": "x.safetensors"}}`, "negative"},
	} {
		if _, err := ParseSafetensorsIndex([]byte(tc.in), "idx.json"); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "idx.json: ") {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestParseLFSPointer(t *testing.T) {
	const ptr = "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"
	p, err := ParseLFSPointer([]byte(ptr), "w.safetensors")
	if err != nil || p.Size != 12345 || !strings.HasPrefix(p.OID, "4d7a") {
		t.Fatalf("%v %+v", err, p)
	}
	if !LooksLikeLFSPointer([]byte(ptr[:50])) || LooksLikeLFSPointer([]byte(`{"a": 1}`)) {
		t.Error("LooksLikeLFSPointer")
	}
	for _, tc := range []struct{ in, want string }{
		{"hello", "not a Git LFS pointer"},
		{"version https://git-lfs.github.com/spec/v1\nsize 3\n", "without oid"},
		{"version https://git-lfs.github.com/spec/v1\noid md5:abc\nsize 3\n", "line 2: oid"},
		{"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize -3\n", "line 3: size"},
		{"version https://git-lfs.github.com/spec/v1\nnokeyvalue\n", "line 2"},
		{"version https://git-lfs.github.com/spec/v1\n" + strings.Repeat("x y\n", 300), "too large"},
	} {
		if _, err := ParseLFSPointer([]byte(tc.in), "f"); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "f: ") {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
}
