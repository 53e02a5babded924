package modelrepo

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseKubernetesYAMLFile(t *testing.T) {
	data, err := os.ReadFile("testdata/deploy/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := ParseKubernetesYAML(data, "deploy/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.Kind+"/"+o.Name)
	}
	if want := []string{"Deployment/llama", "Service/llama", "CronJob/warm"}; !reflect.DeepEqual(kinds, want) {
		t.Fatalf("objects %v, want %v", kinds, want)
	}
	d := objs[0]
	if d.Namespace != "serving" || d.APIVersion != "apps/v1" || d.Line != 2 || d.Doc != 0 {
		t.Errorf("deployment header %+v", d)
	}
	if len(d.PodSpecs) != 1 || d.PodSpecs[0].Path != "spec.template.spec" {
		t.Fatalf("pod specs %+v", d.PodSpecs)
	}
	cs := d.Containers()
	if len(cs) != 2 || cs[0].Name != "vllm" || cs[1].Name != "fetch" || cs[1].Kind != "initContainer" {
		t.Fatalf("containers %+v", cs)
	}
	v := cs[0]
	if v.ImageLine != 16 || !ImagePinned(v.Image) || !reflect.DeepEqual(v.Args, []string{"serve", "/models/llama", "--config", "/etc/vllm/engine.yaml"}) {
		t.Errorf("vllm container %+v", v)
	}
	if len(v.VolumeMounts) != 2 || v.VolumeMounts[0].MountPath != "/models" || !v.VolumeMounts[0].ReadOnly || v.VolumeMounts[0].Line != 24 {
		t.Errorf("mounts %+v", v.VolumeMounts)
	}
	if len(v.Env) != 2 || v.Env[0] != (EnvVar{Name: "VLLM_ALLOW_LONG_MAX_MODEL_LEN", Value: "1", Line: 19}) || v.Env[1].Value != "" {
		t.Errorf("env %+v", v.Env)
	}
	cj := objs[2]
	if cj.Doc != 3 || len(cj.PodSpecs) != 1 || cj.PodSpecs[0].Path != "spec.jobTemplate.spec.template.spec" || cj.Containers()[0].Image != "curlimages/curl" {
		t.Errorf("cronjob %+v", cj)
	}
}

func TestParseKubernetesYAML(t *testing.T) {
	tests := []struct {
		name, yaml string
		err        string // "" for success
		objects    int
	}{
		{"pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, image: x}]\n", "", 1},
		{"empty", "", "", 0},
		{"comments and separators", "# c\n---\n---\n", "", 0},
		{"values file", "replicaCount: 1\nimage: {repository: x}\n", "", 0},
		{"list kind", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  spec: {containers: [{image: a}]}\n", "", 2},
		{"custom resource", "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nspec:\n  predictor:\n    containers:\n    - image: vllm/vllm-openai:latest\n", "", 1},
		{"no kind", "apiVersion: v1\nmetadata: {name: x}\n", "d.yaml:1: object (apiVersion v1) without kind", 0},
		{"no apiVersion", "kind: Pod\nmetadata: {name: x}\n", "d.yaml:1: Pod object without apiVersion", 0},
		{"metadata only", "a: 1\n---\nmetadata: {name: x}\n", "d.yaml:3: document 2: Kubernetes object without apiVersion and kind", 0},
		{"syntax", "apiVersion: v1\nkind: [Pod\n", "d.yaml:", 0},
		{"scalar doc", "just text\n", "d.yaml:1: document 1: want a Kubernetes object (a mapping), got \"just text\"", 0},
		{"list doc", "- a\n", "d.yaml:1: document 1: want a Kubernetes object", 0},
		{"containers map", "apiVersion: v1\nkind: Pod\nspec:\n  containers: {a: b}\n", "", 1}, // not a pod spec: no list
		{"container scalar", "apiVersion: v1\nkind: Pod\nspec:\n  containers: [x]\n", "d.yaml:4: Pod spec.containers[0]: want a container (a mapping), got \"x\"", 0},
		{"image list", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - image: [a]\n", "d.yaml:5: spec.containers[0].image: want a string, got a list", 0},
		{"args string", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - image: a\n    args: serve\n", "d.yaml:6: spec.containers[0].args: want a list of strings", 0},
		{"init not list", "apiVersion: v1\nkind: Pod\nspec:\n  containers: []\n  initContainers: 3\n", "d.yaml:5: Pod spec.initContainers: want a list of containers", 0},
		{"mounts not list", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - image: a\n    volumeMounts: {a: b}\n", "d.yaml:6: spec.containers[0].volumeMounts: want a list", 0},
		{"kind number ok", "apiVersion: v1\nkind: 3\n", "", 1},
		{"metadata list", "apiVersion: v1\nkind: Pod\nmetadata: [a]\n", "d.yaml:3: Pod: metadata: want a mapping", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := ParseKubernetesYAML([]byte(tt.yaml), "d.yaml")
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("err = %v, want prefix %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != tt.objects {
				t.Errorf("%d objects, want %d: %+v", len(objs), tt.objects, objs)
			}
		})
	}
}

func TestParseDockerfile(t *testing.T) {
	data, err := os.ReadFile("testdata/deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	froms, err := ParseDockerfile(data, "deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	want := []DockerFrom{
		{Line: 4, Image: "golang:1.22", Platform: "$BUILDPLATFORM", Stage: "build"},
		{Line: 10, Image: "${BASE}", Stage: "runtime", Variable: true},
		{Line: 12, Image: "build", StageRef: true},
		{Line: 13, Image: "scratch", Scratch: true},
		{Line: 14, Image: "vllm/vllm-openai@sha256:5f1c1c9d1b7e0a3d4c2b8e6f7a9d0c1b2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b", Stage: "final"},
	}
	if !reflect.DeepEqual(froms, want) {
		t.Errorf("got\n%+v\nwant\n%+v", froms, want)
	}
	for _, tt := range []struct{ in, err string }{
		{"FROM\n", "D:1: FROM without an image"},
		{"FROM --platform=x\n", "D:1: FROM without an image"},
		{"FROM a b\n", "D:1: FROM a b: want"},
		{"RUN x \\\n  y\nFROM a AS\n", "D:3: FROM a AS: want"},
	} {
		if _, err := ParseDockerfile([]byte(tt.in), "D"); err == nil || !strings.HasPrefix(err.Error(), tt.err) {
			t.Errorf("%q: err = %v, want %q", tt.in, err, tt.err)
		}
	}
	// A continuation whose next line is a comment continues after the comment.
	froms, err = ParseDockerfile([]byte("FROM \\\n# note\n  alpine:3 AS a\n"), "D")
	if err != nil || len(froms) != 1 || froms[0].Image != "alpine:3" || froms[0].Line != 1 {
		t.Errorf("continuation: %+v, %v", froms, err)
	}
}

func TestImagePinned(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	tests := map[string]bool{
		"vllm/vllm-openai@" + d:                        true,
		"vllm/vllm-openai:v0.9.0@" + d:                 true,
		"registry:5000/ns/img@" + d:                    true,
		"vllm/vllm-openai:v0.9.0":                      false,
		"vllm/vllm-openai":                             false,
		"vllm/vllm-openai:latest":                      false,
		"@" + d:                                        false,
		"img@sha256:" + strings.Repeat("AB", 32):       false,
		"img@sha256:" + strings.Repeat("ab", 31):       false,
		"img@sha512:" + strings.Repeat("ab", 64):       false,
		"img@" + d + " ":                               false,
		"${IMAGE}":                                     false,
		"img@sha256:" + strings.Repeat("ab", 32) + "0": false,
	}
	for ref, want := range tests {
		if got := ImagePinned(ref); got != want {
			t.Errorf("ImagePinned(%q) = %v, want %v", ref, got, want)
		}
	}
}

func TestParseServeCommand(t *testing.T) {
	tests := []struct {
		image         string
		command, args []string
		want          ServeInvocation
	}{
		{"vllm/vllm-openai:v1", nil, []string{"--config", "/etc/vllm/engine.yaml"}, ServeInvocation{IsVLLM: true, ConfigPath: "/etc/vllm/engine.yaml"}},
		{"my/image", []string{"vllm", "serve", "/models/x", "--port", "8000"}, nil, ServeInvocation{IsVLLM: true, Model: "/models/x"}},
		{"my/image", []string{"python3", "-m", "vllm.entrypoints.openai.api_server"}, []string{"--model=/models/y"}, ServeInvocation{IsVLLM: true, Model: "/models/y"}},
		{"my/image", []string{"/bin/sh", "-c", "exec vllm serve '/models/z' --config=/c.yaml"}, nil, ServeInvocation{IsVLLM: true, Model: "/models/z", ConfigPath: "/c.yaml"}},
		{"my/image", []string{"serve", "--config", "/c.yaml"}, nil, ServeInvocation{IsVLLM: true, ConfigPath: "/c.yaml"}},
		{"nginx:1", []string{"nginx", "-g", "daemon off;"}, nil, ServeInvocation{}},
		{"otel/opentelemetry-collector:0.1", nil, []string{"--config=/conf/otel.yaml"}, ServeInvocation{ConfigPath: "/conf/otel.yaml"}},
		{"node:20", []string{"npm", "run", "serve"}, nil, ServeInvocation{}},
	}
	for _, tt := range tests {
		if got := ParseServeCommand(tt.image, tt.command, tt.args); got != tt.want {
			t.Errorf("ParseServeCommand(%q, %q, %q) = %+v, want %+v", tt.image, tt.command, tt.args, got, tt.want)
		}
	}
}

func TestFileKinds(t *testing.T) {
	for name, want := range map[string]bool{"deploy/Dockerfile": true, "deploy/Dockerfile.gpu": true, "deploy/vllm.Dockerfile": true,
		"deploy/Containerfile": true, "deploy/dockerfile.md": false, "deploy/docker-compose.yaml": false} {
		if IsDockerfile(name) != want {
			t.Errorf("IsDockerfile(%q) = %v", name, !want)
		}
	}
	for name, want := range map[string]bool{"a.yaml": true, "a.YML": true, "a.json": false, "yaml": false} {
		if IsYAMLFile(name) != want {
			t.Errorf("IsYAMLFile(%q) = %v", name, !want)
		}
	}
}
