package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/sample"
	"lifeboat/manifest"

	"github.com/opencontainers/go-digest"
)

// randomToken makes a token of a real format at test time (no token-shaped literal is kept in
// the repository): prefix and n characters of alphabet.
func randomToken(prefix string, n int, alphabet string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for range n {
		b.WriteByte(alphabet[rand.IntN(len(alphabet))])
	}
	return b.String()
}

const tokenLetters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// vllmDocsWithToken is the vLLM docs' manifest set (PVC, Secret with the Hub token, Deployment)
// with a Hugging Face token of the real format in the Secret's stringData.
func vllmDocsWithToken(t *testing.T, tok string) []byte {
	t.Helper()
	data, err := os.ReadFile("../../manifest/modelrepo/testdata/deploy/secrets/vllm-docs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.Replace(string(data), "REPLACE_WITH_TOKEN", tok, 1))
}

// manifest build refuses deployment files holding secrets, through the binary: the vLLM docs'
// Secret with a real-format Hub token, a kind: List holding a Secret, a literal VLLM_API_KEY
// and an sk- key in args. Exit 2, every file and line named, no manifest written, and no
// secret value in any output (text or -o json).
func TestManifestBuildRefusesSecrets(t *testing.T) {
	l, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hf := randomToken("hf_", 34, tokenLetters)
	sk := randomToken("sk-proj-", 48, tokenLetters+"0123456789")
	apiKey := randomToken("", 24, tokenLetters)
	list, err := os.ReadFile("../../manifest/modelrepo/testdata/deploy/secrets/list.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"vllm-docs.yaml": vllmDocsWithToken(t, hf),
		"list.yaml":      list,
		"serve.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: ["--model", "/models/llama", "--api-key", "` + sk + `"]
        env:
        - name: VLLM_API_KEY
          value: "` + apiKey + `"
`),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(l.DeployDir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secrets := []string{hf, sk, apiKey, sk[8:24], hf[3:20], "eyJhdXRocyI6e319"}
	out := filepath.Join(t.TempDir(), "manifest.json")
	for _, format := range []string{"text", "json"} {
		r := cli(t, nil, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", out, "-o", format)
		if r.code != 2 {
			t.Fatalf("-o %s: exit %d, want 2\n%s%s", format, r.code, r.stdout, r.stderr)
		}
		for _, want := range []string{
			filepath.Join(l.DeployDir, "vllm-docs.yaml") + ":24:", "Secret hf-token-secret, stringData.token",
			filepath.Join(l.DeployDir, "list.yaml") + ":17:", "Secret registry-creds, data..dockerconfigjson",
			filepath.Join(l.DeployDir, "serve.yaml") + ":11:", "sk-",
			filepath.Join(l.DeployDir, "serve.yaml") + ":14:", "Deployment vllm, env VLLM_API_KEY value",
		} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("-o %s: the refusal does not name %q:\n%s", format, want, r.stderr)
			}
		}
		for _, s := range secrets {
			if strings.Contains(r.stdout+r.stderr, s) {
				t.Fatalf("-o %s: a secret value is in the output:\n%s%s", format, r.stdout, r.stderr)
			}
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("-o %s: a manifest was written despite the refusal (%v)", format, err)
		}
	}
	// Without them (secretKeyRef instead, as the vLLM docs' Deployment itself does), it builds.
	for name := range files {
		os.Remove(filepath.Join(l.DeployDir, name))
	}
	docs := vllmDocsWithToken(t, hf)
	i := strings.Index(string(docs), "apiVersion: apps/v1")
	if err := os.WriteFile(filepath.Join(l.DeployDir, "vllm-docs.yaml"), docs[i:], 0o644); err != nil {
		t.Fatal(err)
	}
	if r := cli(t, nil, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", out); r.code != 0 {
		t.Fatalf("build with the Secret referenced, not embedded: exit %d\n%s", r.code, r.stderr)
	}
}

// A manifest built before the refusal (by an older Lifeboat) that embeds the vLLM docs' Secret:
// manifest lint reports deploy-secret as an error naming the file, line and field, exit 1, in
// text and JSON, without the value.
func TestManifestLintReportsEmbeddedSecret(t *testing.T) {
	l, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hf := randomToken("hf_", 34, tokenLetters)
	const name = "vllm-docs.yaml"
	if err := os.WriteFile(filepath.Join(l.DeployDir, name), []byte("# placeholder\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(t.TempDir(), "manifest.json")
	if r := cli(t, nil, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", m); r.code != 0 {
		t.Fatalf("build: exit %d\n%s", r.code, r.stderr)
	}
	embedDeployFile(t, m, "deploy/"+name, vllmDocsWithToken(t, hf))

	r := cli(t, nil, "manifest", "lint", m, "--model", l.ModelDir)
	if r.code != 1 || !strings.Contains(r.stdout, "error[deploy-secret] deploy/"+name) ||
		!strings.Contains(r.stdout, "deploy/"+name+":24: a Secret's stringData value (Secret hf-token-secret, stringData.token)") {
		t.Fatalf("lint: exit %d, want 1 with deploy-secret naming the file and line\n%s%s", r.code, r.stdout, r.stderr)
	}
	j := cli(t, nil, "manifest", "lint", m, "--model", l.ModelDir, "-o", "json")
	var rep struct {
		Findings []struct{ Rule, Severity, Path, Message string }
	}
	if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil {
		t.Fatalf("lint -o json: %v\n%s", err, j.stdout)
	}
	found := false
	for _, f := range rep.Findings {
		found = found || (f.Rule == "deploy-secret" && f.Severity == "error" && f.Path == "deploy/"+name && strings.Contains(f.Message, ":24:"))
	}
	if j.code != 1 || !found {
		t.Fatalf("lint -o json: exit %d, no deploy-secret error finding\n%s", j.code, j.stdout)
	}
	for _, out := range []string{r.stdout + r.stderr, j.stdout + j.stderr} {
		if strings.Contains(out, hf) || strings.Contains(out, hf[3:20]) {
			t.Fatalf("lint prints the secret value:\n%s", out)
		}
	}
}

// embedDeployFile rewrites a built manifest as an older Lifeboat would have written it with data
// as the embedded content of the deployment file at bundle path p: the layer's bytes, size,
// digest and checksum annotations.
func embedDeployFile(t *testing.T, manifestFile, p string, data []byte) {
	t.Helper()
	raw, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	sums := manifest.ChecksumsOf(data)
	done := false
	for _, l := range doc["layers"].([]any) {
		layer := l.(map[string]any)
		ann := layer["annotations"].(map[string]any)
		if ann[manifest.AnnotationFilepath] != p {
			continue
		}
		layer["digest"] = digest.FromBytes(data).String()
		layer["size"] = len(data)
		layer["data"] = base64.StdEncoding.EncodeToString(data)
		ann[manifest.AnnotationMD5], ann[manifest.AnnotationCRC32C] = sums.MD5, sums.CRC32C
		ann[manifest.AnnotationCRC64NVME], ann[manifest.AnnotationCRC32] = sums.CRC64NVME, sums.CRC32
		if _, ok := ann[manifest.AnnotationBLAKE3]; ok {
			ann[manifest.AnnotationBLAKE3] = sums.BLAKE3
		}
		done = true
	}
	if !done {
		t.Fatalf("%s has no layer %s", manifestFile, p)
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifestFile, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := manifest.ReadFile(manifestFile); err != nil {
		t.Fatalf("the rewritten manifest does not parse: %v", err)
	}
}
