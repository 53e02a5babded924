package modelrepo

import (
	"os"
	"path/filepath"
	"testing"

	"lifeboat/manifest/modelrepo/jinja"
)

// benchTemplates are real chat templates of different sizes: Llama 3.3 (small), Qwen3 (medium)
// and gpt-oss (the largest in the corpus).
var benchTemplates = []string{
	"testdata/chat_templates/llama-3.3-70b-instruct.jinja",
	"testdata/chat_templates/qwen3-0.6b.jinja",
	"jinja/testdata/openai-gpt-oss-120b.jinja",
}

// benchParse runs parse over each of benchTemplates, read once, as a sub-benchmark.
func benchParse(b *testing.B, parse func(src, name string) error) {
	for _, p := range benchTemplates {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		src, name := string(data), filepath.Base(p)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := parse(src, name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckJinjaSyntax measures the strict checker the lint runs on every template.
func BenchmarkCheckJinjaSyntax(b *testing.B) {
	benchParse(b, CheckJinjaSyntax)
}

// BenchmarkJinjaParse measures the renderer's parse, which the warm prober and engine-sim run.
func BenchmarkJinjaParse(b *testing.B) {
	benchParse(b, func(src, _ string) error {
		_, err := jinja.Parse(src)
		return err
	})
}
