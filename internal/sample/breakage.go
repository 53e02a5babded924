package sample

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// Helpers for the broken variants of a generated repository: the tests of engine-sim and lint
// break the same repositories the same ways with them.

// TensorSpec is a tensor's name, dtype and shape, as a safetensors header gives them.
type TensorSpec struct {
	Name, DType string
	Shape       []int64
}

// WriteZeroSafetensors writes a safetensors file holding the tensors, with zero bytes: the
// loaders under test compare names, dtypes and shapes. An existing file is replaced, not written
// through (fixtures may be hard links to a shared copy).
func WriteZeroSafetensors(path string, ts []TensorSpec) error {
	hdr := map[string]any{}
	var off int64
	for _, x := range ts {
		n, ok := dtypeSize[x.DType]
		if !ok {
			return fmt.Errorf("%s: tensor %s: unknown dtype %s", path, x.Name, x.DType)
		}
		for _, d := range x.Shape {
			n *= d
		}
		hdr[x.Name] = map[string]any{"dtype": x.DType, "shape": x.Shape, "data_offsets": []int64{off, off + n}}
		off += n
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	buf := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	return replaceFile(path, append(append(buf, js...), make([]byte, off)...))
}

// ReadSafetensorsHeader lists a safetensors file's tensors in name order.
func ReadSafetensorsHeader(path string) ([]TensorSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var n uint64
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil {
		return nil, fmt.Errorf("%s: header length: %w", path, err)
	}
	if n > 100<<20 {
		return nil, fmt.Errorf("%s: header of %d bytes", path, n)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	var ts []TensorSpec
	for name, v := range raw {
		if name == "__metadata__" {
			continue
		}
		var e struct {
			DType string  `json:"dtype"`
			Shape []int64 `json:"shape"`
		}
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", path, name, err)
		}
		ts = append(ts, TensorSpec{name, e.DType, e.Shape})
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts, nil
}

// EditSafetensors rewrites a safetensors file with the tensor list edit makes of its own.
func EditSafetensors(path string, edit func([]TensorSpec) []TensorSpec) error {
	ts, err := ReadSafetensorsHeader(path)
	if err != nil {
		return err
	}
	return WriteZeroSafetensors(path, edit(ts))
}

// EditJSON rewrites a JSON object file (config.json, tokenizer_config.json…) through edit.
func EditJSON(path string, edit func(map[string]any)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	edit(doc)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return replaceFile(path, append(out, '\n'))
}

// LinkTree makes dst a copy of the files of src (one level) as hard links, so each broken
// variant starts from one generated repository cheaply; edits replace files, never write
// through a link.
func LinkTree(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			return fmt.Errorf("%s: %s is not a regular file", src, e.Name())
		}
		if err := os.Link(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func replaceFile(path string, data []byte) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
