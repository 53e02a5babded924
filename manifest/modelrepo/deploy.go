package modelrepo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// K8sObject is one Kubernetes object of a (multi-document) YAML file.
type K8sObject struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	Doc        int // 0-based index of the YAML document
	Line       int // line where the object starts
	PodSpecs   []PodSpec
}

// PodSpec is a pod template found in an object (spec, spec.template.spec,
// spec.jobTemplate.spec.template.spec, or any mapping with a containers list in custom resources).
type PodSpec struct {
	Path       string // e.g. "spec.template.spec"
	Line       int
	Containers []Container // containers, then initContainers, then ephemeralContainers
}

// Container is a container of a pod spec.
type Container struct {
	Name         string
	Kind         string // "container", "initContainer" or "ephemeralContainer"
	Line         int
	Image        string
	ImageLine    int
	Command      []string
	Args         []string
	VolumeMounts []VolumeMount
	Env          []EnvVar
	Exec         ContainerExec // command line, environment and accelerators (deploy_exec.go)
}

// VolumeMount is a container's volumeMounts entry.
type VolumeMount struct {
	Name      string
	MountPath string
	SubPath   string
	ReadOnly  bool
	Line      int
}

// EnvVar is a container's env entry with a literal value (valueFrom entries have Value "").
type EnvVar struct {
	Name  string
	Value string
	Line  int
}

// MaxDeployFileBytes bounds what the deployment parsers read.
const MaxDeployFileBytes = 16 << 20

// KubernetesError is a problem of one document or object, with its line.
type KubernetesError struct {
	Name string
	Line int
	Msg  string
}

func (e *KubernetesError) Error() string { return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg) }

// ParseKubernetesYAML parses a multi-document YAML file of Kubernetes objects. Empty documents are
// skipped; a document without apiVersion, kind or metadata is not treated as a Kubernetes object
// (e.g. a Helm values file) and is skipped too. It fails on YAML syntax errors, on documents that
// are not mappings, on objects missing apiVersion or kind, and on pod specs whose fields have the
// wrong type; the error names the file and line.
func ParseKubernetesYAML(data []byte, name string) (objs []K8sObject, err error) {
	defer func() {
		if p := recover(); p != nil {
			objs, err = nil, fmt.Errorf("%s: cannot parse YAML: %v", name, p)
		}
	}()
	if len(data) > MaxDeployFileBytes {
		return nil, fmt.Errorf("%s: %d bytes is too large (limit %d)", name, len(data), MaxDeployFileBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for doc := 0; ; doc++ {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, yamlError(name, err)
		}
		root := &n
		if root.Kind == yaml.DocumentNode {
			if len(root.Content) == 0 {
				continue
			}
			root = deref(root.Content[0])
		}
		if root == nil {
			continue
		}
		if root.Kind == yaml.ScalarNode {
			if k, _ := resolveScalar(root); k == kNull {
				continue
			}
		}
		if root.Kind != yaml.MappingNode {
			return nil, &KubernetesError{name, root.Line, fmt.Sprintf("document %d: want a Kubernetes object (a mapping), got %s", doc+1, kindName(root))}
		}
		got, err := k8sObjects(root, name, doc, 0)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
}

func mapGet(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			return k, deref(m.Content[i+1])
		}
	}
	return nil, nil
}

// scalarField returns a string field of a mapping; "" when absent or null.
func scalarField(m *yaml.Node, key, name, where string) (string, int, error) {
	k, v := mapGet(m, key)
	if k == nil || v == nil {
		return "", 0, nil
	}
	if v.Kind != yaml.ScalarNode {
		return "", v.Line, &KubernetesError{name, v.Line, fmt.Sprintf("%s%s: want a string, got %s", where, key, kindName(v))}
	}
	if kd, _ := resolveScalar(v); kd == kNull {
		return "", v.Line, nil
	}
	return v.Value, v.Line, nil
}

func k8sObjects(root *yaml.Node, name string, doc, depth int) ([]K8sObject, error) {
	apiK, apiV := mapGet(root, "apiVersion")
	kindK, kindV := mapGet(root, "kind")
	metaK, _ := mapGet(root, "metadata")
	if apiK == nil && kindK == nil && metaK == nil {
		return nil, nil // not a Kubernetes object
	}
	o := K8sObject{Doc: doc, Line: root.Line}
	var err error
	if o.APIVersion, _, err = scalarField(root, "apiVersion", name, ""); err != nil {
		return nil, err
	}
	if o.Kind, _, err = scalarField(root, "kind", name, ""); err != nil {
		return nil, err
	}
	switch {
	case o.APIVersion == "" && o.Kind == "":
		return nil, &KubernetesError{name, root.Line, fmt.Sprintf("document %d: Kubernetes object without apiVersion and kind", doc+1)}
	case o.APIVersion == "":
		return nil, &KubernetesError{name, lineOf(kindV, root), fmt.Sprintf("%s object without apiVersion", o.Kind)}
	case o.Kind == "":
		return nil, &KubernetesError{name, lineOf(apiV, root), fmt.Sprintf("object (apiVersion %s) without kind", o.APIVersion)}
	}
	if _, meta := mapGet(root, "metadata"); meta != nil {
		if meta.Kind != yaml.MappingNode {
			if k, _ := resolveScalar(meta); meta.Kind != yaml.ScalarNode || k != kNull {
				return nil, &KubernetesError{name, meta.Line, fmt.Sprintf("%s: metadata: want a mapping, got %s", o.Kind, kindName(meta))}
			}
		}
		if o.Name, _, err = scalarField(meta, "name", name, "metadata."); err != nil {
			return nil, err
		}
		if o.Namespace, _, err = scalarField(meta, "namespace", name, "metadata."); err != nil {
			return nil, err
		}
	}
	if strings.HasSuffix(o.Kind, "List") {
		if _, items := mapGet(root, "items"); items != nil && items.Kind == yaml.SequenceNode && depth < 4 {
			var out []K8sObject
			for _, it := range items.Content {
				if it = deref(it); it == nil || it.Kind != yaml.MappingNode {
					continue
				}
				sub, err := k8sObjects(it, name, doc, depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, sub...)
			}
			return append([]K8sObject{o}, out...), nil
		}
	}
	w := &podWalker{name: name, kind: o.Kind}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Kind == yaml.ScalarNode && (k.Value == "spec" || k.Value == "template") {
			if err := w.walk(deref(root.Content[i+1]), k.Value, 0); err != nil {
				return nil, err
			}
		}
	}
	o.PodSpecs = w.specs
	return []K8sObject{o}, nil
}

func lineOf(n, fallback *yaml.Node) int {
	if n != nil {
		return n.Line
	}
	return fallback.Line
}

type podWalker struct {
	name, kind string
	specs      []PodSpec
	nodes      int
}

// walk finds every mapping with a "containers" list below n.
func (w *podWalker) walk(n *yaml.Node, at string, depth int) error {
	w.nodes++
	if n == nil || depth > 24 || w.nodes > 100000 {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		if _, c := mapGet(n, "containers"); c != nil && c.Kind == yaml.SequenceNode {
			ps, err := w.podSpec(n, at)
			if err != nil {
				return err
			}
			w.specs = append(w.specs, ps)
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				continue
			}
			if err := w.walk(deref(n.Content[i+1]), at+"."+k.Value, depth+1); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := w.walk(deref(c), fmt.Sprintf("%s[%d]", at, i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *podWalker) podSpec(n *yaml.Node, at string) (PodSpec, error) {
	ps := PodSpec{Path: at, Line: n.Line}
	for _, f := range []struct{ key, kind string }{{"containers", "container"}, {"initContainers", "initContainer"}, {"ephemeralContainers", "ephemeralContainer"}} {
		_, list := mapGet(n, f.key)
		if list == nil {
			continue
		}
		if list.Kind == yaml.ScalarNode {
			if k, _ := resolveScalar(list); k == kNull {
				continue
			}
		}
		if list.Kind != yaml.SequenceNode {
			return ps, &KubernetesError{w.name, list.Line, fmt.Sprintf("%s %s.%s: want a list of containers, got %s", w.kind, at, f.key, kindName(list))}
		}
		for i, cn := range list.Content {
			cn = deref(cn)
			where := fmt.Sprintf("%s.%s[%d].", at, f.key, i)
			if cn == nil || cn.Kind != yaml.MappingNode {
				return ps, &KubernetesError{w.name, list.Line, fmt.Sprintf("%s %s: want a container (a mapping), got %s", w.kind, strings.TrimSuffix(where, "."), kindName(cn))}
			}
			c, err := w.container(cn, f.kind, where)
			if err != nil {
				return ps, err
			}
			ps.Containers = append(ps.Containers, c)
		}
	}
	return ps, nil
}

func (w *podWalker) container(n *yaml.Node, kind, where string) (Container, error) {
	c := Container{Kind: kind, Line: n.Line, Exec: containerExec(n)}
	var err error
	if c.Name, _, err = scalarField(n, "name", w.name, where); err != nil {
		return c, err
	}
	if c.Image, c.ImageLine, err = scalarField(n, "image", w.name, where); err != nil {
		return c, err
	}
	if c.Command, err = w.strings(n, "command", where); err != nil {
		return c, err
	}
	if c.Args, err = w.strings(n, "args", where); err != nil {
		return c, err
	}
	if _, vms := mapGet(n, "volumeMounts"); vms != nil && vms.Kind != yaml.ScalarNode {
		if vms.Kind != yaml.SequenceNode {
			return c, &KubernetesError{w.name, vms.Line, fmt.Sprintf("%svolumeMounts: want a list, got %s", where, kindName(vms))}
		}
		for i, vm := range vms.Content {
			vm = deref(vm)
			at := fmt.Sprintf("%svolumeMounts[%d].", where, i)
			if vm == nil || vm.Kind != yaml.MappingNode {
				return c, &KubernetesError{w.name, vms.Line, fmt.Sprintf("%s: want a mapping, got %s", strings.TrimSuffix(at, "."), kindName(vm))}
			}
			m := VolumeMount{Line: vm.Line}
			if m.Name, _, err = scalarField(vm, "name", w.name, at); err != nil {
				return c, err
			}
			if m.MountPath, _, err = scalarField(vm, "mountPath", w.name, at); err != nil {
				return c, err
			}
			if m.SubPath, _, err = scalarField(vm, "subPath", w.name, at); err != nil {
				return c, err
			}
			if _, ro := mapGet(vm, "readOnly"); ro != nil && ro.Kind == yaml.ScalarNode {
				_, m.ReadOnly = resolveScalar(ro)
			}
			c.VolumeMounts = append(c.VolumeMounts, m)
		}
	}
	if _, env := mapGet(n, "env"); env != nil && env.Kind == yaml.SequenceNode {
		for _, e := range env.Content {
			if e = deref(e); e == nil || e.Kind != yaml.MappingNode {
				continue
			}
			_, nv := mapGet(e, "name")
			_, vv := mapGet(e, "value")
			if nv == nil || nv.Kind != yaml.ScalarNode {
				continue
			}
			ev := EnvVar{Name: nv.Value, Line: e.Line}
			if vv != nil && vv.Kind == yaml.ScalarNode {
				ev.Value = vv.Value
			}
			c.Env = append(c.Env, ev)
		}
	}
	return c, nil
}

func (w *podWalker) strings(n *yaml.Node, key, where string) ([]string, error) {
	_, v := mapGet(n, key)
	if v == nil {
		return nil, nil
	}
	if v.Kind == yaml.ScalarNode {
		if k, _ := resolveScalar(v); k == kNull {
			return nil, nil
		}
	}
	if v.Kind != yaml.SequenceNode {
		return nil, &KubernetesError{w.name, v.Line, fmt.Sprintf("%s%s: want a list of strings, got %s", where, key, kindName(v))}
	}
	out := make([]string, 0, len(v.Content))
	for i, e := range v.Content {
		e = deref(e)
		if e == nil || e.Kind != yaml.ScalarNode {
			return nil, &KubernetesError{w.name, v.Line, fmt.Sprintf("%s%s[%d]: want a string, got %s", where, key, i, kindName(e))}
		}
		out = append(out, e.Value)
	}
	return out, nil
}

// Containers returns every container of the object's pod specs.
func (o K8sObject) Containers() []Container {
	var out []Container
	for _, ps := range o.PodSpecs {
		out = append(out, ps.Containers...)
	}
	return out
}

// DockerFrom is one FROM instruction of a Dockerfile.
type DockerFrom struct {
	Line     int
	Image    string // as written, e.g. "vllm/vllm-openai:v0.9.0" or "${BASE}"
	Platform string // --platform value, if any
	Stage    string // AS name, if any
	Scratch  bool   // FROM scratch
	StageRef bool   // the image is an earlier stage's name
	Variable bool   // the image contains an unresolved $VAR / ${VAR} (build-arg)
}

var (
	dockerHeredoc   = regexp.MustCompile(`<<-?\s*["']?([A-Za-z_][A-Za-z0-9_]*)["']?`)
	dockerDirective = regexp.MustCompile(`^#\s*([A-Za-z][A-Za-z0-9]*)\s*=\s*(\S+)\s*$`)
)

// ParseDockerfile returns the FROM instructions of a Dockerfile, following line continuations
// (with the escape directive), skipping comments and heredoc bodies.
func ParseDockerfile(data []byte, name string) ([]DockerFrom, error) {
	if len(data) > MaxDeployFileBytes {
		return nil, fmt.Errorf("%s: %d bytes is too large (limit %d)", name, len(data), MaxDeployFileBytes)
	}
	escape := byte('\\')
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), MaxDeployFileBytes+1)
	var (
		out      []DockerFrom
		stages   = map[string]bool{}
		lineNo   int
		start    int
		buf      strings.Builder
		heredocs []string
		header   = true
	)
	flush := func() error {
		instr := strings.TrimSpace(buf.String())
		buf.Reset()
		if instr == "" {
			return nil
		}
		fields := strings.Fields(instr)
		if strings.EqualFold(fields[0], "FROM") {
			f := DockerFrom{Line: start}
			args := fields[1:]
			for len(args) > 0 && strings.HasPrefix(args[0], "--") {
				if v, ok := strings.CutPrefix(args[0], "--platform="); ok {
					f.Platform = v
				}
				args = args[1:]
			}
			if len(args) == 0 {
				return fmt.Errorf("%s:%d: FROM without an image", name, start)
			}
			f.Image = args[0]
			switch {
			case len(args) == 3 && strings.EqualFold(args[1], "AS"):
				f.Stage = args[2]
			case len(args) != 1:
				return fmt.Errorf("%s:%d: FROM %s: want \"FROM [--platform=…] image [AS name]\"", name, start, strings.Join(args, " "))
			}
			lower := strings.ToLower(f.Image)
			f.Scratch = lower == "scratch"
			f.StageRef = stages[lower]
			f.Variable = strings.Contains(f.Image, "$")
			if f.Stage != "" {
				stages[strings.ToLower(f.Stage)] = true
			}
			out = append(out, f)
		}
		for _, m := range dockerHeredoc.FindAllStringSubmatch(instr, -1) {
			heredocs = append(heredocs, m[1])
		}
		return nil
	}
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if len(heredocs) > 0 {
			if strings.TrimLeft(strings.TrimRight(line, " \t\r"), "\t") == heredocs[0] {
				heredocs = heredocs[1:]
			}
			continue
		}
		trimmed := strings.TrimSpace(line)
		if header {
			// Parser directives ("# escape=`", "# syntax=…") come first; anything else ends them.
			if m := dockerDirective.FindStringSubmatch(trimmed); m != nil {
				if strings.EqualFold(m[1], "escape") && (m[2] == "`" || m[2] == "\\") {
					escape = m[2][0]
				}
				continue
			}
			header = false
		}
		if strings.HasPrefix(trimmed, "#") {
			continue // comments, also inside continuations
		}
		if buf.Len() == 0 {
			start = lineNo
		}
		if t := strings.TrimRight(line, " \t\r"); len(t) > 0 && t[len(t)-1] == escape {
			buf.WriteString(t[:len(t)-1])
			buf.WriteByte(' ')
			continue
		}
		buf.WriteString(line)
		if err := flush(); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// pinnedRef is compiled on first use, not at every start of every command: its bounded
// repetition makes it one of the costlier expressions to compile.
var pinnedRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`) })

// ImagePinned reports whether an image reference names its content by digest
// (name[:tag]@sha256:<64 hex>). Tags, including "latest", are mutable and do not pin.
func ImagePinned(ref string) bool { return pinnedRef().MatchString(ref) }

// IsDockerfile reports whether a file name looks like a Dockerfile or Containerfile.
func IsDockerfile(name string) bool {
	b := strings.ToLower(path.Base(name))
	switch path.Ext(b) {
	case ".md", ".txt", ".rst", ".adoc":
		return false
	}
	return b == "dockerfile" || b == "containerfile" || strings.HasPrefix(b, "dockerfile.") ||
		strings.HasPrefix(b, "containerfile.") || strings.HasSuffix(b, ".dockerfile") || strings.HasSuffix(b, ".containerfile")
}

// IsYAMLFile reports whether a file name has a .yaml or .yml extension.
func IsYAMLFile(name string) bool {
	e := strings.ToLower(path.Ext(name))
	return e == ".yaml" || e == ".yml"
}

// ServeInvocation is what a container command line says about vLLM.
type ServeInvocation struct {
	IsVLLM     bool
	Model      string // positional model of "vllm serve MODEL", or --model; "" when absent
	ConfigPath string // --config value
}

// ParseServeCommand inspects a container's command and args (and image name) for a vLLM server:
// the image name contains "vllm", the command runs vllm (or python -m vllm.entrypoints…), or the
// command line starts with "serve" (an image whose entrypoint is "vllm"). A --config flag alone
// does not count, since many servers take one; the caller may decide from ConfigPath. Shell forms
// ("sh -c 'vllm serve …'") are split on whitespace.
func ParseServeCommand(image string, command, args []string) ServeInvocation {
	var toks []string
	for _, s := range append(append([]string{}, command...), args...) {
		if strings.ContainsAny(s, " \t\n") {
			toks = append(toks, strings.Fields(s)...)
		} else {
			toks = append(toks, s)
		}
	}
	for i, t := range toks {
		toks[i] = strings.Trim(t, `"'`)
	}
	inv := ServeInvocation{IsVLLM: strings.Contains(strings.ToLower(image), "vllm")}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case path.Base(t) == "vllm" || strings.Contains(t, "vllm.entrypoints"):
			inv.IsVLLM = true
		case t == "serve" && (i == 0 || path.Base(toks[i-1]) == "vllm"):
			inv.IsVLLM = true
			if i+1 < len(toks) && !strings.HasPrefix(toks[i+1], "-") && inv.Model == "" {
				inv.Model = toks[i+1]
				i++
			}
		case t == "--config" || t == "--model":
			if i+1 < len(toks) {
				if t == "--config" {
					inv.ConfigPath = toks[i+1]
				} else if inv.Model == "" {
					inv.Model = toks[i+1]
				}
				i++
			}
		case strings.HasPrefix(t, "--config="):
			inv.ConfigPath = strings.TrimPrefix(t, "--config=")
		case strings.HasPrefix(t, "--model="):
			if inv.Model == "" {
				inv.Model = strings.TrimPrefix(t, "--model=")
			}
		}
	}
	return inv
}
