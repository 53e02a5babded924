package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"

	"go.yaml.in/yaml/v3"
)

// Change is one file that differs between two manifests.
type Change struct {
	Path string `json:"path"`
	// Kind is "added", "removed" or "changed".
	Kind string `json:"kind"`
	Role Role   `json:"role"`
	Old  *Entry `json:"old,omitempty"`
	New  *Entry `json:"new,omitempty"`
	// Settings are what changed inside a file the manifest embeds (the engine config and the
	// deployment files), key by key: the semantic release diff ("max-model-len: 8192 → 32768").
	Settings []Setting `json:"settings,omitempty"`
}

// Setting is one key of an embedded YAML or JSON file that was added, removed or changed. Key is
// the dotted path (spec.template.spec.containers[0].image); Old or New is "" when absent.
type Setting struct {
	Key string `json:"key"`
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
}

// Entry is the side of a change: what a manifest says of a file.
type Entry struct {
	Size   int64  `json:"size"`
	Digest string `json:"digest"`
	Role   Role   `json:"role"`
}

// Delta is the result of comparing two manifests, in path order.
type Delta struct {
	Changes   []Change     `json:"changes"`
	Added     int          `json:"added"`
	Removed   int          `json:"removed"`
	Changed   int          `json:"changed"`
	Unchanged int          `json:"unchanged"`
	Model     []ModelDelta `json:"model_config"`
}

// ModelDelta is a field of the ModelPack config that changed.
type ModelDelta struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// Empty reports whether the manifests describe the same files and model.
func (d Delta) Empty() bool { return len(d.Changes) == 0 && len(d.Model) == 0 }

func entry(f File) *Entry { return &Entry{Size: f.Size, Digest: f.Digest.String(), Role: f.Role} }

// Diff compares two manifests file by file (by bundle path) and by model config.
func Diff(old, new *Manifest) Delta {
	d := Delta{Changes: []Change{}, Model: []ModelDelta{}}
	i, j := 0, 0
	for i < len(old.Files) || j < len(new.Files) {
		switch {
		case j == len(new.Files) || (i < len(old.Files) && old.Files[i].Path < new.Files[j].Path):
			f := old.Files[i]
			d.Changes = append(d.Changes, Change{Path: f.Path, Kind: "removed", Role: f.Role, Old: entry(f)})
			d.Removed++
			i++
		case i == len(old.Files) || new.Files[j].Path < old.Files[i].Path:
			f := new.Files[j]
			d.Changes = append(d.Changes, Change{Path: f.Path, Kind: "added", Role: f.Role, New: entry(f)})
			d.Added++
			j++
		default:
			a, b := old.Files[i], new.Files[j]
			if a.Digest != b.Digest || a.Size != b.Size || a.Role != b.Role {
				d.Changes = append(d.Changes, Change{Path: a.Path, Kind: "changed", Role: b.Role, Old: entry(a), New: entry(b),
					Settings: settingsDiff(a.Data, b.Data)})
				d.Changed++
			} else {
				d.Unchanged++
			}
			i++
			j++
		}
	}
	o, n := old.Model, new.Model
	for _, f := range []struct{ name, a, b string }{
		{"name", o.Descriptor.Name, n.Descriptor.Name},
		{"family", o.Descriptor.Family, n.Descriptor.Family},
		{"format", o.Config.Format, n.Config.Format},
		{"param_size", o.Config.ParamSize, n.Config.ParamSize},
		{"precision", o.Config.Precision, n.Config.Precision},
		{"quantization", o.Config.Quantization, n.Config.Quantization},
	} {
		if f.a != f.b {
			d.Model = append(d.Model, ModelDelta{Field: f.name, Old: f.a, New: f.b})
		}
	}
	return d
}

// settingsDiff compares two embedded YAML (or JSON) files key by key; nil when either is not
// embedded or not YAML.
func settingsDiff(a, b []byte) []Setting {
	if a == nil || b == nil {
		return nil
	}
	fa, oka := flattenYAML(a)
	fb, okb := flattenYAML(b)
	if !oka || !okb {
		return nil
	}
	keys := map[string]bool{}
	for k := range fa {
		keys[k] = true
	}
	for k := range fb {
		keys[k] = true
	}
	var out []Setting
	for k := range keys {
		if fa[k] != fb[k] {
			out = append(out, Setting{Key: k, Old: fa[k], New: fb[k]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// flattenYAML maps every scalar of every document to its dotted path (documents after the first
// are prefixed with their index, "[1].spec…").
func flattenYAML(data []byte) (map[string]string, bool) {
	out := map[string]string{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, true
		}
		if err != nil {
			return nil, false
		}
		prefix := ""
		if i > 0 {
			prefix = fmt.Sprintf("[%d]", i)
		}
		flatten(prefix, doc, out)
	}
}

func flatten(path string, v any, out map[string]string) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			flatten(join(k), c, out)
		}
	case []any:
		for i, c := range x {
			flatten(fmt.Sprintf("%s[%d]", path, i), c, out)
		}
	case nil:
		out[path] = "null"
	default:
		out[path] = fmt.Sprint(x)
	}
}
