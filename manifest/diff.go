package manifest

// Change is one file that differs between two manifests.
type Change struct {
	Path string `json:"path"`
	// Kind is "added", "removed" or "changed".
	Kind string `json:"kind"`
	Role Role   `json:"role"`
	Old  *Entry `json:"old,omitempty"`
	New  *Entry `json:"new,omitempty"`
	// Settings are what changed inside a file the manifest embeds (the engine config, the
	// deployment files, the model's small configs), key by key: the semantic release diff
	// ("max-model-len: 8192 → 32768", "rope_scaling: {…} → (removed)").
	Settings []Setting `json:"settings,omitempty"`
	// ChatTemplates are the chat templates that changed in the file: a .jinja file's own, or the
	// chat_template key of tokenizer_config.json or chat_template.json (one per named template).
	ChatTemplates []TemplateChange `json:"chat_templates,omitempty"`
	// Lines are the lines removed ("- …") and added ("+ …") in an embedded text file that is not
	// YAML or JSON of keys (a Dockerfile, a lock file), at most MaxDiffLines of them.
	Lines []string `json:"lines,omitempty"`
	// Note says why settings are not compared although they could be: the file is not embedded
	// in one of the manifests (built by an older Lifeboat, or too large).
	Note string `json:"note,omitempty"`
}

// Setting is one key of an embedded YAML or JSON file that was added, removed or changed. Key is
// the dotted path (spec.template.spec.containers[0].image); values are rendered compactly, maps
// and lists in flow style ({rope_type: yarn, factor: 4.0}); Old or New is "" when absent.
type Setting struct {
	Key string `json:"key"`
	// Kind is "added", "removed" or "changed".
	Kind string `json:"kind"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
}

// Transition renders the change as "old → new", "(absent)" and "(removed)" standing for the
// missing side.
func (s Setting) Transition() string {
	old, new := s.Old, s.New
	switch s.Kind {
	case "added":
		old = "(absent)"
	case "removed":
		new = "(removed)"
	}
	return old + " → " + new
}

// TemplateChange is a chat template that was added, removed or changed: its SHA-256 on each side
// and how many lines were added and removed.
type TemplateChange struct {
	// Name is the template's name in tokenizer_config.json's list form ("tool_use"), else "".
	Name         string `json:"name,omitempty"`
	Kind         string `json:"kind"`
	OldSHA256    string `json:"old_sha256,omitempty"`
	NewSHA256    string `json:"new_sha256,omitempty"`
	AddedLines   int    `json:"added_lines"`
	RemovedLines int    `json:"removed_lines"`
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
				d.Changes = append(d.Changes, contentDiff(Change{Path: a.Path, Kind: "changed", Role: b.Role, Old: entry(a), New: entry(b)}, a, b))
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
