package kubernetes

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

var byDigest = regexp.MustCompile(`^[a-z0-9.:/_-]+@sha256:[0-9a-f]{64}$`)

// images returns every "image" string anywhere in the YAML documents of data.
func images(t *testing.T, file string, data []byte) []string {
	t.Helper()
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if s, ok := c.(string); ok && k == "image" {
					out = append(out, s)
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
	for {
		var doc any
		if err := dec.Decode(&doc); err != nil {
			break
		}
		walk(doc)
	}
	return out
}

// No manifest runs Lifeboat by a tag that can move: every image is the placeholder "lifeboat",
// which kustomization.yaml's one images: entry pins by digest (no newTag), or a reference by
// digest itself.
func TestKubernetesImagesByDigest(t *testing.T) {
	for f, data := range manifests(t) {
		for _, img := range images(t, f, data) {
			if img != "lifeboat" && !byDigest.MatchString(img) {
				t.Errorf("%s: image %q: by tag; use the placeholder \"lifeboat\" (pinned in kustomization.yaml) or REPO@sha256:…", f, img)
			}
		}
	}
	kust, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images []map[string]string `json:"images"`
	}
	if err := utilyaml.Unmarshal(kust, &k); err != nil {
		t.Fatal(err)
	}
	for _, e := range k.Images {
		if _, ok := e["newTag"]; ok || !byDigest.MatchString(e["newName"]+"@"+e["digest"]) {
			t.Errorf("kustomization.yaml: images entry %v: want newName and a sha256 digest, no newTag", e)
		}
	}
}

// `make pin-image IMAGE_REF=REPO@sha256:…` (the reference `make image` writes) rewrites the
// kustomization's images entry, and what kustomize renders then runs that image by digest in
// every container; a reference by tag is refused.
func TestMakePinImage(t *testing.T) {
	dir := t.TempDir()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kust := filepath.Join(dir, "kustomization.yaml")
	ref := "registry.internal:5000/platform/lifeboat@sha256:" + strings.Repeat("0123456789abcdef", 4)
	pin := func(ref string) (string, error) {
		c := exec.Command("make", "-s", "--no-print-directory", "pin-image", "KUSTOMIZATION="+kust, "IMAGE_REF="+ref)
		c.Dir = "../.."
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if out, err := pin("registry.internal:5000/platform/lifeboat:v1.2.3"); err == nil || !strings.Contains(out, "IMAGE_REF=REGISTRY/REPO@sha256:") {
		t.Errorf("pin-image with a tag: %v\n%s", err, out)
	}
	if out, err := pin(ref); err != nil {
		t.Fatalf("pin-image: %v\n%s", err, out)
	}
	data, err := os.ReadFile(kust)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "    newName: registry.internal:5000/platform/lifeboat\n    digest: sha256:"+strings.Repeat("0123456789abcdef", 4)+"\n") {
		t.Fatalf("kustomization.yaml after pin-image:\n%s", data)
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Log("no kubectl here: the rendered manifests were not checked (the kustomization was)")
		return
	}
	out, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	got := images(t, "kustomize output", out)
	if len(got) < 2 {
		t.Fatalf("kustomize rendered %d images:\n%s", len(got), out)
	}
	for _, img := range got {
		if img != ref {
			t.Errorf("rendered image %q, want %q", img, ref)
		}
	}
}
