package manifest

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzContentDiff: what a manifest embeds is untrusted (anyone may hand over a manifest to diff),
// so the semantic diff of two embedded files never panics, whatever the bytes, and never prints a
// character that could forge an output line or an escape sequence; its line list stays bounded.
func FuzzContentDiff(f *testing.F) {
	f.Add("model/config.json", []byte(`{"vocab_size": 512, "rope_scaling": {"rope_type": "llama3", "factor": 8}}`), []byte(`{"vocab_size": 500}`))
	f.Add("model/tokenizer_config.json", []byte(`{"chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"}`), []byte(`{"chat_template": [{"name": "default", "template": "x"}]}`))
	f.Add("engine/engine.yaml", []byte("max-model-len: 8192\nenable-lora: true\n"), []byte("max-model-len: 32768\n---\n- a\n"))
	f.Add("deploy/Dockerfile", []byte("FROM vllm/vllm-openai:v0.9.0\nCMD x\n"), []byte("FROM vllm/vllm-openai:v0.9.1\n\x1b[2Jok\n"))
	f.Add("engine/engine.yaml", []byte("a: &x [*x]\n"), []byte("b: \"\\u202e\"\n"))
	f.Fuzz(func(t *testing.T, path string, a, b []byte) {
		part, role := PartEngine, Role("")
		switch {
		case strings.HasPrefix(path, "model/"):
			part = PartModel
			if strings.HasSuffix(path, ".jinja") {
				role = RoleChatTemplate
			}
		case strings.HasPrefix(path, "deploy/"):
			part = PartDeployment
		}
		c := contentDiff(Change{Path: path}, File{Path: path, Part: part, Role: role, Data: a}, File{Path: path, Part: part, Role: role, Data: b})
		if len(c.Lines) > 41 {
			t.Fatalf("%d lines: the line list is not bounded", len(c.Lines))
		}
		check := func(what, s string) {
			if strings.IndexFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) >= 0 {
				t.Fatalf("%s %q holds an unprintable character", what, s)
			}
		}
		for _, s := range c.Settings {
			check("key", s.Key)
			check("value", s.Transition())
		}
		for _, l := range c.Lines {
			check("line", l)
		}
		for _, tc := range c.ChatTemplates {
			check("template name", tc.Name)
		}
	})
}
