package kube

import (
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// vllmDefaultPort is where vLLM's OpenAI server listens without --port.
const vllmDefaultPort = 8000

// vllmPort is the port a serving container's vLLM listens on when the container declares none:
// the last --port=N or --port N of its command and args (argparse: the last one wins), the
// words of an `sh -c` one-liner included, $(VAR) expanded from the container's literal env as
// the kubelet does ($VAR and ${VAR} too inside a shell line); vLLM's default 8000 otherwise,
// and when the value cannot be known (an env value from a ConfigMap or Secret).
//
// A small scan on purpose: the full vLLM argv parser (prefixes, config files) belongs to the
// manifest linter; this one only needs the port.
func vllmPort(c corev1.Container) int {
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	var words []string
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		a = kubeletExpand(a, env)
		if strings.ContainsAny(a, " \t\n") {
			for _, w := range strings.Fields(a) {
				words = append(words, strings.Trim(shellExpand(w, env), `'"`))
			}
			continue
		}
		words = append(words, a)
	}
	port := vllmDefaultPort
	for i, w := range words {
		v, ok := "", false
		switch {
		case strings.HasPrefix(w, "--port="):
			v, ok = strings.TrimPrefix(w, "--port="), true
		case w == "--port" && i+1 < len(words):
			v, ok = words[i+1], true
		}
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= 65535 {
			port = n
		} else {
			port = vllmDefaultPort // unknown: what vLLM would refuse or we cannot resolve
		}
	}
	return port
}

var kubeletVarRE = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

// kubeletExpand replaces $(VAR) with the container's env value as the kubelet does ($$ is a
// literal $; an unknown variable stays as written).
func kubeletExpand(s string, env map[string]string) string {
	return kubeletVarRE.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

var shellVarRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// shellExpand replaces $VAR and ${VAR} inside a shell one-liner's word with the env value.
func shellExpand(s string, env map[string]string) string {
	return shellVarRE.ReplaceAllStringFunc(s, func(m string) string {
		name := strings.Trim(m, "${}")
		if v, ok := env[name]; ok {
			return v
		}
		return m
	})
}
