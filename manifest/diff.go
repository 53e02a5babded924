package manifest

// Change is one file that differs between two manifests.
type Change struct {
	Path string `json:"path"`
	// Kind is "added", "removed" or "changed".
	Kind string `json:"kind"`
	Role Role   `json:"role"`
	Old  *Entry `json:"old,omitempty"`
	New  *Entry `json:"new,omitempty"`
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
				d.Changes = append(d.Changes, Change{Path: a.Path, Kind: "changed", Role: b.Role, Old: entry(a), New: entry(b)})
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
