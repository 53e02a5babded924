package kube

import (
	corev1 "k8s.io/api/core/v1"

	"lifeboat/manifest/modelrepo"
)

// vllmDefaultPort is where vLLM's OpenAI server listens without --port.
const vllmDefaultPort = modelrepo.DefaultPort

// vllmPort is the port a serving container's vLLM listens on when the container declares none.
// It reads the command line with the linter's reader (modelrepo.FindServeCommand and
// ParseServeArgs), so the launcher and `manifest lint` agree on what vLLM runs: vllm serve or
// python -m …api_server, an `sh -c` one-liner, $(VAR) expanded from the container's env as the
// kubelet does, argparse's prefixes, the last --port winning. A container without a command runs
// its image's entry point, so its args are vLLM's flags (the launcher already knows the container
// serves the model: it mounts it). vLLM's default 8000 otherwise, and when the value cannot be
// known (an env value from a ConfigMap or Secret) or is not a port.
func vllmPort(c corev1.Container) int {
	mc := modelrepoContainer(c)
	sc, ok := modelrepo.FindServeCommand(mc)
	if !ok {
		if len(c.Command) > 0 {
			return vllmDefaultPort
		}
		// The image's entry point, whatever the image is called.
		env := modelrepo.NewContainerEnv(mc)
		sc = modelrepo.ServeCommand{Positional: true}
		for _, w := range mc.Exec.Args {
			w.Text, w.Unknown = env.Expand(w.Text)
			sc.Args = append(sc.Args, w)
		}
		if len(sc.Args) > 0 && sc.Args[0].Text == "serve" {
			sc.Args = sc.Args[1:]
		}
	}
	cfg := modelrepo.ParseServeArgs(sc.Args, c.Name).EngineConfig(nil, "", sc.Positional)
	if cfg.Port < 1 || cfg.Port > 65535 {
		return vllmDefaultPort
	}
	return cfg.Port
}

// modelrepoContainer is the part of a container the command-line reader needs. Lines are 0: the
// launcher reports no file positions.
func modelrepoContainer(c corev1.Container) modelrepo.Container {
	words := func(ss []string) []modelrepo.ArgWord {
		out := make([]modelrepo.ArgWord, len(ss))
		for i, s := range ss {
			out[i] = modelrepo.ArgWord{Text: s}
		}
		return out
	}
	mc := modelrepo.Container{Name: c.Name, Kind: "container", Image: c.Image, Command: c.Command, Args: c.Args}
	mc.Exec.Command, mc.Exec.Args = words(c.Command), words(c.Args)
	for _, e := range c.Env {
		en := modelrepo.EnvEntry{Name: e.Name, Value: e.Value}
		if e.ValueFrom != nil {
			en.Value, en.From = "", envSource(e.ValueFrom)
		}
		mc.Exec.Env = append(mc.Exec.Env, en)
	}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			mc.Exec.EnvFrom = append(mc.Exec.EnvFrom, "configMapRef "+ef.ConfigMapRef.Name)
		case ef.SecretRef != nil:
			mc.Exec.EnvFrom = append(mc.Exec.EnvFrom, "secretRef "+ef.SecretRef.Name)
		}
	}
	return mc
}

// envSource names where a valueFrom env value comes from, as the linter writes it.
func envSource(s *corev1.EnvVarSource) string {
	switch {
	case s.ConfigMapKeyRef != nil:
		return "configMapKeyRef " + s.ConfigMapKeyRef.Name + "/" + s.ConfigMapKeyRef.Key
	case s.SecretKeyRef != nil:
		return "secretKeyRef " + s.SecretKeyRef.Name + "/" + s.SecretKeyRef.Key
	case s.FieldRef != nil:
		return "fieldRef " + s.FieldRef.FieldPath
	case s.ResourceFieldRef != nil:
		return "resourceFieldRef " + s.ResourceFieldRef.Resource
	}
	return "valueFrom"
}
