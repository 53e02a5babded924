package modelrepo

import (
	"fmt"
	"strings"
)

// How a container's command line is expanded before it runs: the kubelet replaces $(VAR) in
// command and args with the container's environment (k8s.io/kubernetes third_party/forked/golang/
// expansion), and a shell started with -c expands $VAR and ${VAR} in its script.

// EnvValue is what the lint knows of one environment variable of a container.
type EnvValue struct {
	Value   string
	Known   bool   // false: set from a ConfigMap, Secret, field or resource (valueFrom), or envFrom
	Unknown string // why the value is unknown, e.g. "set from secretKeyRef hf-token/token (valueFrom)"
	Line    int
}

// ContainerEnv is a container's environment as the kubelet builds it: envFrom sources first, then
// env entries in order, each expanded with the variables defined before it; a later entry wins.
type ContainerEnv struct {
	Vars map[string]EnvValue
	// EnvFrom names the envFrom sources (e.g. "configMapRef vllm-env"): any variable not in Vars may
	// come from one of them, so it is unknown rather than unset.
	EnvFrom []string
}

// NewContainerEnv builds the environment of c.
func NewContainerEnv(c Container) ContainerEnv {
	env := ContainerEnv{Vars: map[string]EnvValue{}, EnvFrom: c.Exec.EnvFrom}
	for _, e := range c.Exec.Env {
		if e.From != "" {
			env.Vars[e.Name] = EnvValue{Unknown: "set from " + e.From + " (valueFrom)", Line: e.Line}
			continue
		}
		v, unknown := env.Expand(e.Value)
		ev := EnvValue{Value: v, Known: unknown == "", Unknown: unknown, Line: e.Line}
		env.Vars[e.Name] = ev
	}
	return env
}

// Lookup returns a variable; ok is false when the pod spec does not set it.
func (e ContainerEnv) Lookup(name string) (EnvValue, bool) {
	v, ok := e.Vars[name]
	return v, ok
}

// Expand replaces $(VAR) references the way the kubelet does: "$$" is a literal "$", a reference to
// a variable the pod spec sets is replaced by its value, any other reference is kept as written.
// unknown says why the result is not what the container sees ("" when it is), naming the first
// variable whose value the lint cannot know.
func (e ContainerEnv) Expand(s string) (out, unknown string) {
	if !strings.Contains(s, "$") {
		return s, ""
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String(), unknown
			}
			name := s[i+2 : i+2+end]
			v, ok := e.Vars[name]
			switch {
			case ok && v.Known:
				b.WriteString(v.Value)
			case ok:
				b.WriteString("$(" + name + ")")
				if unknown == "" {
					unknown = fmt.Sprintf("$(%s) is %s", name, v.Unknown)
				}
			default:
				b.WriteString("$(" + name + ")")
				if unknown == "" && len(e.EnvFrom) > 0 {
					unknown = fmt.Sprintf("$(%s) may come from envFrom (%s)", name, strings.Join(e.EnvFrom, ", "))
				}
			}
			i += end + 2
		default:
			b.WriteByte('$')
		}
	}
	return b.String(), unknown
}

// shellVar is the value a shell sees for $name: ok is false when the lint cannot know it.
func (e ContainerEnv) shellVar(name string) (string, string) {
	v, ok := e.Vars[name]
	switch {
	case ok && v.Known:
		return v.Value, ""
	case ok:
		return "", fmt.Sprintf("$%s is %s", name, v.Unknown)
	case len(e.EnvFrom) > 0:
		return "", fmt.Sprintf("$%s is not set in env and may come from envFrom (%s)", name, strings.Join(e.EnvFrom, ", "))
	default:
		return "", fmt.Sprintf("$%s is not set in the pod spec (the image may set it)", name)
	}
}
