package modelrepo

import (
	"strings"
	"testing"
)

// FuzzServeCommand: a container's command line, split into words at newlines, never panics the
// finder, the shell reader or the argument parser; every problem names the deploy file and a line
// of the command line.
func FuzzServeCommand(f *testing.F) {
	for _, s := range []string{
		"vllm\nserve\n/m\n--max-num-seq\n1024",
		"/bin/sh\n-c\nvllm serve $MODEL --tensor-parallel-size=${TP:-2} --no-enable-prefix-caching; echo \"$(date)\"",
		"python3\n-m\nvllm.entrypoints.openai.api_server\n--model=$(MODEL_ID)\n--served-model-name\na\nb\n-O3",
		"bash\n-lc\nexec env A=1 vllm serve '/m' --lora-modules a=/x '{\"name\":\"b\",\"path\":\"/y\"}' --max-lora-rank 4 \\\n --enable-lora",
		"sh\n-c\n\"unterminated ${X vllm serve `x",
		"vllm\nserve\n--max-num\n--hf-token\n--\n--port\n--hf-overrides.rope_scaling.factor\n4",
	} {
		f.Add(s, "vllm/vllm-openai:v0.11.0")
	}
	f.Fuzz(func(t *testing.T, line, image string) {
		if len(line) > 4096 {
			return
		}
		ws := strings.Split(line, "\n")
		c := Container{Image: image, Exec: ContainerExec{
			Command: words(3, ws[:len(ws)/2]...),
			Args:    words(3+len(ws)/2, ws[len(ws)/2:]...),
			Env:     []EnvEntry{{Name: "MODEL_ID", Value: "/models/$(TP)"}, {Name: "TP", Value: "2"}, {Name: "S", From: "secretKeyRef a/b"}},
		}}
		sc, ok := FindServeCommand(c)
		if !ok {
			return
		}
		cfg := ParseServeArgs(sc.Args, "deploy/d.yaml").EngineConfig([]byte("model: /m\nmax-model-len: 4k\n"), "engine/engine.yaml", sc.Positional)
		for _, p := range cfg.Problems {
			if p.Line < 3 || p.Line > 3+len(ws)+strings.Count(line, "\n") {
				t.Fatalf("problem line %d outside the command line: %s", p.Line, p.Format("deploy/d.yaml"))
			}
			if !strings.HasPrefix(p.Format("deploy/d.yaml"), "deploy/d.yaml:") && !strings.HasPrefix(p.Format("deploy/d.yaml"), "engine/engine.yaml:") {
				t.Fatalf("problem without a file: %s", p.Format("deploy/d.yaml"))
			}
		}
		for _, k := range cfg.Keys {
			if k.File == "" {
				t.Fatalf("key %q without a file", k.Key)
			}
		}
	})
}
