package modelrepo

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// SafetensorsIndex is a parsed model.safetensors.index.json.
type SafetensorsIndex struct {
	WeightMap    map[string]string // tensor name → shard file, relative to the index's directory
	TotalSize    int64             // metadata.total_size, when HasTotalSize
	HasTotalSize bool
	Metadata     map[string]any
}

// ParseSafetensorsIndex parses a sharded checkpoint's index: {"metadata": {"total_size": n},
// "weight_map": {"tensor": "model-00001-of-00002.safetensors"}}. Shard names must be clean relative
// paths to .safetensors files.
func ParseSafetensorsIndex(data []byte, name string) (*SafetensorsIndex, error) {
	raw, err := decodeObject(data, name)
	if err != nil {
		return nil, err
	}
	ix := &SafetensorsIndex{}
	if md, ok := raw["metadata"]; ok && md != nil {
		m, ok := md.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: field metadata: want an object, got %s", name, typeName(md))
		}
		ix.Metadata = m
		n, ok, err := Int(m, "total_size")
		if err != nil {
			return nil, fmt.Errorf("%s: metadata: %w", name, err)
		}
		if ok && n < 0 {
			return nil, fmt.Errorf("%s: field metadata.total_size: %d is negative", name, n)
		}
		ix.TotalSize, ix.HasTotalSize = n, ok
	}
	wm, ok := raw["weight_map"]
	if !ok || wm == nil {
		return nil, fmt.Errorf("%s: field weight_map missing", name)
	}
	m, ok := wm.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: field weight_map: want an object of tensor name → shard file, got %s", name, typeName(wm))
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%s: field weight_map is empty", name)
	}
	ix.WeightMap = make(map[string]string, len(m))
	for tensor, v := range m {
		shard, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%s: field weight_map[%q]: want a file name, got %s", name, tensor, typeName(v))
		}
		if err := checkShardName(shard); err != nil {
			return nil, fmt.Errorf("%s: field weight_map[%q]: %v", name, tensor, err)
		}
		ix.WeightMap[tensor] = shard
	}
	return ix, nil
}

// checkShardName accepts a clean relative path to a .safetensors file.
func checkShardName(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty shard name")
	case !strings.HasSuffix(s, ".safetensors"):
		return fmt.Errorf("shard %q is not a .safetensors file", s)
	case strings.HasPrefix(s, "/") || strings.ContainsAny(s, "\\\x00") || path.Clean(s) != s || strings.HasPrefix(s, "../"):
		return fmt.Errorf("shard %q is not a clean relative path", s)
	}
	return nil
}

// Shards returns the distinct shard files the index names, sorted.
func (ix *SafetensorsIndex) Shards() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ix.WeightMap {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
