package modelrepo

import (
	"fmt"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// What a container's spec says about the process it runs: command and args with the line of each
// word, the environment with where each value comes from, and the accelerators it asks for. Kept
// apart from the object walk in deploy.go so that the lint of vLLM's command line can grow without
// touching it.

// ContainerExec is the process side of a container.
type ContainerExec struct {
	Command []ArgWord
	Args    []ArgWord
	Env     []EnvEntry
	EnvFrom []string // "configMapRef NAME" / "secretRef NAME"
	// Accelerators maps an extended resource that is a GPU or TPU (nvidia.com/gpu, amd.com/gpu,
	// google.com/tpu, …) to the count the container's limits (else requests) ask for.
	Accelerators map[string]int64
	AccelLine    int // line of the first accelerator entry
}

// ArgWord is one word of a command line. Line is the deploy file line it starts on; when
// Literal, the word is a YAML block scalar ("|") whose content starts on Line and keeps its
// line breaks, so a position inside it has a line of its own.
type ArgWord struct {
	Text    string
	Line    int
	Literal bool
	// Unknown says why the word's value is not what the container sees (a $(VAR) or $VAR the lint
	// cannot resolve); "" when it is known.
	Unknown string
}

// EnvEntry is one env entry of a container.
type EnvEntry struct {
	Name  string
	Value string // literal value (after no expansion)
	From  string // valueFrom source, e.g. "secretKeyRef hf-token/token"; "" for a literal
	Line  int
}

// GPUs returns the total accelerator count the container asks for and the resource names.
func (e ContainerExec) GPUs() (int64, string) {
	var n int64
	names := make([]string, 0, len(e.Accelerators))
	for k, v := range e.Accelerators {
		n += v
		names = append(names, k)
	}
	sort.Strings(names)
	return n, strings.Join(names, ", ")
}

// accelResource reports whether an extended resource name is an accelerator that vLLM's tensor and
// pipeline parallel ranks run on.
func accelResource(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, "/gpu") || strings.HasSuffix(n, "/tpu") || strings.HasPrefix(n, "nvidia.com/mig-") ||
		n == "habana.ai/gaudi" || n == "aws.amazon.com/neuron" || n == "aws.amazon.com/neuroncore"
}

// containerExec reads the process side of a container. It never fails: the object walk has
// already type-checked command and args, and a malformed env or resources entry is skipped.
func containerExec(n *yaml.Node) ContainerExec {
	var e ContainerExec
	e.Command = argWords(n, "command")
	e.Args = argWords(n, "args")
	if _, env := mapGet(n, "env"); env != nil && env.Kind == yaml.SequenceNode {
		for _, en := range env.Content {
			if en = deref(en); en == nil || en.Kind != yaml.MappingNode {
				continue
			}
			_, nv := mapGet(en, "name")
			if nv == nil || nv.Kind != yaml.ScalarNode {
				continue
			}
			ee := EnvEntry{Name: nv.Value, Line: en.Line}
			if _, vv := mapGet(en, "value"); vv != nil && vv.Kind == yaml.ScalarNode {
				ee.Value = vv.Value
			}
			if _, vf := mapGet(en, "valueFrom"); vf != nil && vf.Kind == yaml.MappingNode {
				ee.From = valueFromSource(vf)
			}
			e.Env = append(e.Env, ee)
		}
	}
	if _, ef := mapGet(n, "envFrom"); ef != nil && ef.Kind == yaml.SequenceNode {
		for _, s := range ef.Content {
			s = deref(s)
			for _, ref := range []string{"configMapRef", "secretRef"} {
				if _, r := mapGet(s, ref); r != nil {
					_, name := mapGet(r, "name")
					if name != nil && name.Kind == yaml.ScalarNode {
						e.EnvFrom = append(e.EnvFrom, ref+" "+name.Value)
					} else {
						e.EnvFrom = append(e.EnvFrom, ref)
					}
				}
			}
		}
	}
	if _, res := mapGet(n, "resources"); res != nil {
		for _, which := range []string{"limits", "requests"} {
			_, m := mapGet(res, which)
			if m == nil || m.Kind != yaml.MappingNode {
				continue
			}
			for i := 0; i+1 < len(m.Content); i += 2 {
				k, v := m.Content[i], deref(m.Content[i+1])
				if k.Kind != yaml.ScalarNode || v == nil || v.Kind != yaml.ScalarNode || !accelResource(k.Value) {
					continue
				}
				if _, seen := e.Accelerators[k.Value]; seen {
					continue // limits win over requests (for extended resources they must be equal)
				}
				q, ok := pyIntString(v.Value)
				if !ok || q < 0 {
					continue
				}
				if e.Accelerators == nil {
					e.Accelerators = map[string]int64{}
					e.AccelLine = k.Line
				}
				e.Accelerators[k.Value] = q
			}
		}
	}
	return e
}

func valueFromSource(vf *yaml.Node) string {
	for _, ref := range []string{"secretKeyRef", "configMapKeyRef", "fieldRef", "resourceFieldRef"} {
		_, r := mapGet(vf, ref)
		if r == nil {
			continue
		}
		var parts []string
		for _, k := range []string{"name", "key", "fieldPath", "resource"} {
			if _, v := mapGet(r, k); v != nil && v.Kind == yaml.ScalarNode && v.Value != "" {
				parts = append(parts, v.Value)
			}
		}
		if len(parts) == 0 {
			return ref
		}
		return ref + " " + strings.Join(parts, "/")
	}
	return "valueFrom"
}

func argWords(n *yaml.Node, key string) []ArgWord {
	_, v := mapGet(n, key)
	if v == nil || v.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]ArgWord, 0, len(v.Content))
	for _, e := range v.Content {
		e = deref(e)
		if e == nil || e.Kind != yaml.ScalarNode {
			continue
		}
		w := ArgWord{Text: e.Value, Line: e.Line}
		if e.Style&yaml.LiteralStyle != 0 {
			w.Literal = true
			w.Line = e.Line + 1 // the content starts below the "|" indicator
		}
		out = append(out, w)
	}
	return out
}

// lineAt is the line of byte offset off within the word.
func (w ArgWord) lineAt(off int) int {
	if !w.Literal || off <= 0 {
		return w.Line
	}
	if off > len(w.Text) {
		off = len(w.Text)
	}
	return w.Line + strings.Count(w.Text[:off], "\n")
}

// String renders the word for messages.
func (w ArgWord) String() string { return fmt.Sprintf("%q (line %d)", clip(w.Text, 60), w.Line) }
