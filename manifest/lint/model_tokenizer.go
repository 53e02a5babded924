package lint

import (
	"fmt"
	"strings"

	"lifeboat/manifest/modelrepo"
)

// modelBadFile is a model file that failed to parse.
type modelBadFile struct {
	path string
	err  error
}

// modelTokenizerScan is every top-level tokenizer file parsed once.
type modelTokenizerScan struct {
	infos    []*modelrepo.TokenizerInfo
	bad      []modelBadFile             // in path order
	config   *modelrepo.TokenizerConfig // tokenizer_config.json; nil when absent or invalid
	addedMax int64                      // largest id in added_tokens.json, or -1
}

// modelSentencePieceFiles are the names SentencePiece models go by.
var modelSentencePieceFiles = map[string]bool{"tokenizer.model": true, "spiece.model": true, "sentencepiece.bpe.model": true}

func (c *Context) modelTokenizers() *modelTokenizerScan {
	v, _ := c.Memo("model:tokenizers", func() (any, error) {
		s := &modelTokenizerScan{addedMax: -1}
		var vocab map[string]int64
		var merges [][2]string
		mergesPath := ""
		for _, rel := range c.modelTopLevelFiles() {
			lower := strings.ToLower(rel)
			if !modelIsTokenizerFile(lower) {
				continue
			}
			p := "model/" + rel
			data, skip, err := c.modelReadFile(rel)
			if skip {
				continue
			}
			if err == nil {
				err = s.parse(lower, p, data, &vocab, &merges)
			}
			if err != nil {
				s.bad = append(s.bad, modelBadFile{p, err})
			}
			if lower == "merges.txt" {
				mergesPath = p
			}
		}
		// merges.txt is checked against vocab.json as the tokenizers library does when it
		// converts the slow files.
		if vocab != nil && merges != nil {
			if err := modelrepo.CheckMerges(vocab, merges, "", "merges"); err != nil {
				s.bad = append(s.bad, modelBadFile{mergesPath, fmt.Errorf("%s: %w (checked against vocab.json)", mergesPath, err)})
			}
		}
		return s, nil
	})
	return v.(*modelTokenizerScan)
}

func modelIsTokenizerFile(lower string) bool {
	switch lower {
	case "tokenizer.json", "vocab.json", "merges.txt", "vocab.txt", "tekken.json",
		"tokenizer_config.json", "added_tokens.json", "special_tokens_map.json":
		return true
	}
	return modelSentencePieceFiles[lower] || strings.HasSuffix(lower, ".tiktoken")
}

// parse dispatches one tokenizer file to its parser.
func (s *modelTokenizerScan) parse(lower, p string, data []byte, vocab *map[string]int64, merges *[][2]string) error {
	var info *modelrepo.TokenizerInfo
	var err error
	switch {
	case lower == "tokenizer.json":
		info, err = modelrepo.ParseTokenizerJSON(data, p)
	case modelSentencePieceFiles[lower]:
		info, err = modelrepo.ParseSentencePieceModel(data, p)
	case lower == "vocab.json":
		*vocab, info, err = modelrepo.ParseVocabJSON(data, p)
	case lower == "merges.txt":
		*merges, err = modelrepo.ParseMergesTXT(data, p)
	case lower == "vocab.txt":
		info, err = modelrepo.ParseVocabTXT(data, p)
	case lower == "tekken.json":
		info, err = modelrepo.ParseTekkenJSON(data, p)
	case strings.HasSuffix(lower, ".tiktoken"):
		info, err = modelrepo.ParseTiktoken(data, p)
	case lower == "tokenizer_config.json":
		s.config, err = modelrepo.ParseTokenizerConfig(data, p)
	case lower == "added_tokens.json":
		s.addedMax, err = modelrepo.ParseAddedTokensJSON(data, p)
	case lower == "special_tokens_map.json":
		_, err = modelrepo.ParseSpecialTokensMap(data, p)
	}
	if info != nil && err == nil {
		s.infos = append(s.infos, info)
	}
	return err
}

func checkTokenizerMissing(c *Context) {
	if o := c.modelEngineOverrides(); o.tokenizer != "" && o.tokenizer != o.model {
		return // the engine loads the tokenizer from elsewhere
	}
	has := map[string]bool{}
	for _, rel := range c.modelTopLevelFiles() {
		lower := strings.ToLower(rel)
		has[lower] = true
		if lower == "tokenizer.json" || lower == "vocab.txt" || lower == "tekken.json" || modelSentencePieceFiles[lower] || strings.HasSuffix(lower, ".tiktoken") {
			return
		}
	}
	if has["vocab.json"] && has["merges.txt"] {
		return
	}
	detail := ""
	switch {
	case has["vocab.json"]:
		detail = " (vocab.json is there but merges.txt is not)"
	case has["merges.txt"]:
		detail = " (merges.txt is there but vocab.json is not)"
	}
	c.Errorf("model/", "", "model/ has no usable tokenizer%s: vLLM needs tokenizer.json, tokenizer.model, vocab.json + merges.txt, tekken.json or a *.tiktoken file, and fails at tokenizer init without one", detail)
}

func checkTokenizerInvalid(c *Context) {
	for _, b := range c.modelTokenizers().bad {
		c.Errorf(b.path, "", "%v", b.err)
	}
}

// checkTokenizerVocabSize: ids that ordinary text encodes to (the model vocabulary and added
// tokens not marked special) must have an embedding row, and so must special tokens the model is
// served with (BOS/EOS/pad, or named in the chat template). Other special added tokens beyond
// vocab_size are what vLLM accepts — Gemma 3's shared tokenizer puts <image_soft_token> at
// id == vocab_size, a multimodal placeholder the text model never embeds; vLLM loads it and
// refuses only a request that contains it — so they are not a finding.
func checkTokenizerVocabSize(c *Context) {
	cfg, err := c.ModelConfig()
	if err != nil || cfg == nil || cfg.VocabSize <= 0 {
		return
	}
	s := c.modelTokenizers()
	worst, source := int64(0), ""
	all := int64(0)
	consider := func(regular, size int64, p string) {
		all = max(all, size)
		if regular > worst {
			worst, source = regular, p
		}
	}
	used := servedSpecialTokens(c)
	for _, info := range s.infos {
		regular := info.RegularSize
		if regular == 0 {
			regular = info.Size
		}
		for id, content := range info.Special {
			if id >= cfg.VocabSize && used(content) {
				regular = max(regular, id+1)
			}
		}
		consider(regular, info.Size, info.Source)
	}
	if s.config != nil {
		consider(s.config.MaxRegularAddedID+1, s.config.MaxAddedID+1, "model/tokenizer_config.json")
	}
	consider(s.addedMax+1, s.addedMax+1, "model/added_tokens.json")
	if worst <= cfg.VocabSize {
		if all > cfg.VocabSize {
			c.Log.Debug("special tokens beyond vocab_size (vLLM accepts them)", "vocab_size", cfg.VocabSize, "tokenizer_size", all)
		}
		return
	}
	c.Errorf(source, "", "%s: the tokenizer's vocabulary reaches %d tokens (largest id %d) but %s vocab_size is %d: ids from %d up have no embedding row, so vLLM fails or generates garbage on them",
		source, worst, worst-1, modelConfigPath, cfg.VocabSize, cfg.VocabSize)
}

// servedSpecialTokens reports whether a special token is one chats are served with: the BOS,
// EOS, pad or unk token of tokenizer_config.json, or text in the effective chat template.
func servedSpecialTokens(c *Context) func(string) bool {
	named := map[string]bool{}
	if tc := c.modelTokenizers().config; tc != nil {
		named[tc.BOSToken], named[tc.EOSToken] = true, true
		for _, k := range []string{"pad_token", "unk_token"} {
			if v, ok := tc.Raw[k].(string); ok {
				named[v] = true
			}
		}
	}
	tpl := ""
	if t := c.modelChatTemplates().effective; t != nil {
		tpl = t.Text
	}
	return func(tok string) bool { return tok != "" && (named[tok] || strings.Contains(tpl, tok)) }
}
