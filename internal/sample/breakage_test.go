package sample

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Editing a hard-linked copy replaces its files and leaves the source alone; a rewritten shard
// reads back with the edited tensors.
func TestBreakageHelpers(t *testing.T) {
	src := t.TempDir()
	st := filepath.Join(src, "model.safetensors")
	ts := []TensorSpec{{Name: "a.weight", DType: "BF16", Shape: []int64{4, 2}}, {Name: "b.weight_scale_inv", DType: "F32", Shape: []int64{1, 1}}}
	if err := WriteZeroSafetensors(st, ts); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "config.json"), []byte(`{"vocab_size": 8}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "copy")
	if err := LinkTree(src, dst); err != nil {
		t.Fatal(err)
	}
	if err := EditJSON(filepath.Join(dst, "config.json"), func(d map[string]any) { d["vocab_size"] = 9 }); err != nil {
		t.Fatal(err)
	}
	if err := EditSafetensors(filepath.Join(dst, "model.safetensors"), func(ts []TensorSpec) []TensorSpec { return ts[:1] }); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(src, "config.json")); string(data) != `{"vocab_size": 8}` {
		t.Errorf("source config.json changed: %s", data)
	}
	if got, err := ReadSafetensorsHeader(st); err != nil || !reflect.DeepEqual(got, ts) {
		t.Errorf("source shard = %v, %v; want %v", got, err, ts)
	}
	if got, err := ReadSafetensorsHeader(filepath.Join(dst, "model.safetensors")); err != nil || !reflect.DeepEqual(got, ts[:1]) {
		t.Errorf("edited shard = %v, %v; want %v", got, err, ts[:1])
	}
	if err := os.WriteFile(filepath.Join(src, "x.safetensors"), []byte{1, 2}, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSafetensorsHeader(filepath.Join(src, "x.safetensors")); err == nil {
		t.Error("a 2-byte file read as a safetensors header")
	}
}
