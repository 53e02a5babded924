package manifest

import "sort"

// Group is the count and size of the files of one part and role.
type Group struct {
	Part  Part  `json:"part"`
	Role  Role  `json:"role"`
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// Summary is what `manifest show` prints.
type Summary struct {
	Name   string    `json:"name"`
	Model  ModelSpec `json:"model"`
	Family string    `json:"family,omitempty"`
	Files  int       `json:"files"`
	Bytes  int64     `json:"bytes"`
	Groups []Group   `json:"groups"`
	// Precisions is how the parameters split between precisions, when the checkpoint mixes
	// them (gpt-oss: MXFP4 experts, BF16 elsewhere); nil otherwise.
	Precisions []PrecisionShare `json:"precisions,omitempty"`
}

var partOrder = map[Part]int{PartModel: 0, PartEngine: 1, PartDeployment: 2}

// Summarize groups the manifest's files by part and role.
func (m *Manifest) Summarize() Summary {
	s := Summary{Name: m.Name(), Model: m.Model.Config, Family: m.Model.Descriptor.Family, Groups: []Group{},
		Precisions: m.PrecisionShares()}
	if s.Name == "" {
		s.Name = m.Model.Descriptor.Name
	}
	idx := map[[2]string]int{}
	for _, f := range m.Files {
		k := [2]string{string(f.Part), string(f.Role)}
		i, ok := idx[k]
		if !ok {
			i = len(s.Groups)
			idx[k] = i
			s.Groups = append(s.Groups, Group{Part: f.Part, Role: f.Role})
		}
		s.Groups[i].Files++
		s.Groups[i].Bytes += f.Size
		s.Files++
		s.Bytes += f.Size
	}
	sort.Slice(s.Groups, func(i, j int) bool {
		a, b := s.Groups[i], s.Groups[j]
		if a.Part != b.Part {
			return partOrder[a.Part] < partOrder[b.Part]
		}
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return a.Role < b.Role
	})
	return s
}
