package modelrepo

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// fakeToken makes a token of a real format from random characters at test time, so no
// token-shaped literal sits in the repository for scanners to flag.
func fakeToken(prefix string, n int, alphabet string) string {
	r := rand.New(rand.NewPCG(uint64(len(prefix)), uint64(n)))
	var b strings.Builder
	b.WriteString(prefix)
	for b.Len() < len(prefix)+n {
		b.WriteByte(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

const (
	upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lower = "abcdefghijklmnopqrstuvwxyz"
	digit = "0123456789"
)

func readSecretsTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/deploy/secrets/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestFindSecretsVLLMDocs: the vLLM docs' manifest set (PVC, Secret with the Hub token,
// Deployment): the Secret's stringData.token is found on its line, placeholder or not.
func TestFindSecretsVLLMDocs(t *testing.T) {
	got := FindSecrets(readSecretsTestdata(t, "vllm-docs.yaml"))
	if len(got) != 1 {
		t.Fatalf("want 1 finding, got %v", got)
	}
	if got[0].Line != 24 || got[0].Field != "Secret hf-token-secret, stringData.token" {
		t.Errorf("finding %+v, want line 24, Secret hf-token-secret, stringData.token", got[0])
	}
	// The same file with a real-format token in it: still one finding, and the value is in none.
	tok := fakeToken("hf_", 34, upper+lower)
	data := strings.Replace(string(readSecretsTestdata(t, "vllm-docs.yaml")), "REPLACE_WITH_TOKEN", tok, 1)
	got = FindSecrets([]byte(data))
	if len(got) != 1 || got[0].Line != 24 {
		t.Fatalf("want 1 finding on line 24, got %v", got)
	}
	if strings.Contains(got[0].String(), tok) || strings.Contains(got[0].String(), tok[3:12]) {
		t.Fatalf("finding prints the value: %s", got[0])
	}
}

// TestFindSecretsList: a kind: List's items are objects too; the Secret's base64 data is found.
func TestFindSecretsList(t *testing.T) {
	got := FindSecrets(readSecretsTestdata(t, "list.yaml"))
	if len(got) != 1 || got[0].Line != 17 || got[0].Field != "Secret registry-creds, data..dockerconfigjson" {
		t.Fatalf("want the Secret's data on line 17, got %v", got)
	}
}

// TestFindSecretsBenign: ordinary values of published vLLM deployments — model ids, digests,
// commit hashes, UUIDs, paths, booleans, $(VAR) references, MAX_TOKENS, TOKENIZERS_PARALLELISM,
// a Secret without data — are not secrets.
func TestFindSecretsBenign(t *testing.T) {
	for _, name := range []string{"benign.yaml", "../deployment.yaml", "../Dockerfile"} {
		if got := FindSecrets(readSecretsTestdata(t, name)); len(got) != 0 {
			t.Errorf("%s: want no findings, got %v", name, got)
		}
	}
}

// TestFindSecretsEnvAndFormats: each token format in an env value:, in args and in a
// Dockerfile; credential-named env values; a generated high-entropy literal.
func TestFindSecretsEnvAndFormats(t *testing.T) {
	alnum := upper + lower + digit
	cases := []struct {
		name, doc string
		line      int
		want      string // in Why
	}{
		{"hf env", "env:\n- name: HF_TOKEN\n  value: " + fakeToken("hf_", 34, upper+lower) + "\n", 3, "Hugging Face"},
		{"hf under another name", "env:\n- name: HUB\n  value: " + fakeToken("hf_", 34, upper+lower) + "\n", 3, "Hugging Face"},
		{"openai", "env:\n- name: OPENAI\n  value: " + fakeToken("sk-proj-", 40, alnum) + "\n", 3, "sk-"},
		{"aws id", "env:\n- name: AWS_ACCESS_KEY_ID\n  value: " + fakeToken("AKIA", 16, upper+digit) + "\n", 3, "AWS access key id"},
		{"aws secret by name", "env:\n- name: AWS_SECRET_ACCESS_KEY\n  value: " + fakeToken("", 40, alnum+"/+") + "\n", 3, "AWS_SECRET_ACCESS_KEY"},
		{"github", "env:\n- name: GH\n  value: " + fakeToken("ghp_", 36, alnum) + "\n", 3, "GitHub"},
		{"placeholder under a credential name", "env:\n- name: HF_TOKEN\n  value: hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", 3, "HF_TOKEN"},
		{"vllm api key by name", "env:\n- name: VLLM_API_KEY\n  value: local-dev-key-1\n", 3, "VLLM_API_KEY"},
		{"generated", "env:\n- name: X\n  value: " + fakeToken("", 40, alnum) + "\n", 3, "high-entropy"},
		{"api key in args", "containers:\n- name: vllm\n  args: [\"--api-key\", \"" + fakeToken("sk-", 48, alnum) + "\"]\n", 3, "sk-"},
		{"bearer in a probe header", "httpHeaders:\n- name: Authorization\n  value: Bearer " + fakeToken("", 40, alnum) + "\n", 3, "bearer"},
		{"private key", "data: |\n  -----BEGIN RSA PRIVATE KEY-----\n  MIIE\n", 2, "private key"},
		{"dockerfile", "FROM vllm/vllm-openai@sha256:abc\nENV HF_TOKEN=" + fakeToken("hf_", 34, upper+lower) + "\n", 2, "Hugging Face"},
		{"helm template", "env:\n- name: HF_TOKEN\n  value: {{ .Values.x }} " + fakeToken("hf_", 34, upper+lower) + "\n", 3, "Hugging Face"},
		{"secret in a second document", "a: 1\n---\nkind: Secret\nmetadata: {name: s}\ndata:\n  k: dmFsdWU=\n", 6, "data value"},
		{"stringData not a mapping", "kind: Secret\nstringData: oops\n", 2, "stringData"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := FindSecrets([]byte(tc.doc))
			if len(got) != 1 || got[0].Line != tc.line || !strings.Contains(got[0].Why, tc.want) {
				t.Fatalf("want one finding on line %d about %q, got %v", tc.line, tc.want, got)
			}
		})
	}
	for _, benign := range []string{
		"env:\n- name: HUB\n  value: hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", // a placeholder, all one case
		"env:\n- name: OPENAI_API_KEY\n  value: EMPTY\n",
		"env:\n- name: HF_TOKEN\n  value: ${HF_TOKEN}\n",
		"env:\n- name: HUGGING_FACE_HUB_TOKEN\n  value: \"$HUGGING_FACE_HUB_TOKEN\"\n", // the LWS docs' shape
		"args: [--served-model-name, sk-learn-regressor-deployment-for-tests]\n",
		"env:\n- name: X\n  value: " + strings.Repeat("ab", 20) + "\n",
	} {
		if got := FindSecrets([]byte(benign)); len(got) != 0 {
			t.Errorf("%q: want no findings, got %v", benign, got)
		}
	}
}

// FuzzFindSecrets: never panics; every finding has a line inside the file and a reason.
func FuzzFindSecrets(f *testing.F) {
	for _, name := range []string{"vllm-docs.yaml", "list.yaml", "benign.yaml"} {
		addFileSeed(f, "testdata/deploy/secrets/"+name)
	}
	for _, s := range []string{"", "kind: Secret\ndata: {a: b}\n", "- &a [*a]\n", "env: [{name: A_TOKEN, value: 12345678}]\n", "kind: List\nitems: [{kind: Secret, stringData: {a: b}}]\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := strings.Count(string(data), "\n") + 1
		for _, s := range FindSecrets(data) {
			if s.Line < 1 || s.Line > lines {
				t.Fatalf("finding on line %d of a %d-line file", s.Line, lines)
			}
			if s.Why == "" {
				t.Fatal("finding without a reason")
			}
		}
	})
}
