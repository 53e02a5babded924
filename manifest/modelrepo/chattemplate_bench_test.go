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

func loadBenchTemplates(b *testing.B) map[string]string {
	b.Helper()
	out := map[string]string{}
	for _, p := range benchTemplates {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		out[filepath.Base(p)] = string(data)
	}
	return out
}

// BenchmarkCheckJinjaSyntax measures the strict checker the lint runs on every template.
func BenchmarkCheckJinjaSyntax(b *testing.B) {
	for _, p := range benchTemplates {
		name := filepath.Base(p)
		src := loadBenchTemplates(b)[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := CheckJinjaSyntax(src, name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkJinjaParse measures the renderer's parse, which the warm prober and engine-sim run.
func BenchmarkJinjaParse(b *testing.B) {
	for _, p := range benchTemplates {
		name := filepath.Base(p)
		src := loadBenchTemplates(b)[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := jinja.Parse(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
