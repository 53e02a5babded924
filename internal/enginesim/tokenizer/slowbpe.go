package tokenizer

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"

	"lifeboat/manifest/modelrepo"
	"lifeboat/providers/localfile"
)

// FromSlowBPE loads a GPT-2 style slow tokenizer (vocab.json + merges.txt) the way
// transformers converts it to a fast one: it synthesises the equivalent tokenizer.json (BPE model
// with that vocabulary and merges, a ByteLevel pre-tokenizer with the GPT-2 regex, a ByteLevel
// decoder) and loads it with FromJSON. Added tokens come from
// tokenizer_config.json's added_tokens_decoder and added_tokens.json; those named bos/eos/unk/pad
// in tokenizer_config.json, or flagged special in added_tokens_decoder, are special.
func FromSlowBPE(dir string) (*HF, error) {
	vp, mp := filepath.Join(dir, "vocab.json"), filepath.Join(dir, "merges.txt")
	vdata, err := localfile.ReadFile(vp, maxSlowFile)
	if err != nil {
		return nil, err
	}
	mdata, err := localfile.ReadFile(mp, maxSlowFile)
	if err != nil {
		return nil, err
	}
	vocab, _, err := modelrepo.ParseVocabJSON(vdata, vp)
	if err != nil {
		return nil, err
	}
	merges, err := modelrepo.ParseMergesTXT(mdata, mp)
	if err != nil {
		return nil, err
	}
	type added struct {
		ID         int64  `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	byContent := map[string]*added{}
	named := map[string]bool{}
	if d, err := localfile.ReadFile(filepath.Join(dir, "tokenizer_config.json"), maxSlowFile); err == nil {
		var tc struct {
			Decoder map[string]struct {
				Content string `json:"content"`
				Special bool   `json:"special"`
			} `json:"added_tokens_decoder"`
		}
		if json.Unmarshal(d, &tc) == nil {
			for k, v := range tc.Decoder {
				id, err := strconv.ParseInt(k, 10, 64)
				if err != nil || v.Content == "" {
					continue
				}
				byContent[v.Content] = &added{ID: id, Content: v.Content, Special: v.Special}
			}
		}
		if c, err := modelrepo.ParseTokenizerConfig(d, "tokenizer_config.json"); err == nil {
			for _, key := range []string{"bos_token", "eos_token", "unk_token", "pad_token"} {
				switch v := c.Raw[key].(type) {
				case string:
					named[v] = true
				case map[string]any:
					if s, ok := v["content"].(string); ok {
						named[s] = true
					}
				}
			}
		}
	}
	if d, err := localfile.ReadFile(filepath.Join(dir, "added_tokens.json"), maxSlowFile); err == nil {
		var at map[string]int64
		if err := json.Unmarshal(d, &at); err != nil {
			return nil, fmt.Errorf("added_tokens.json: %v", err)
		}
		for c, id := range at {
			if _, ok := byContent[c]; !ok && c != "" {
				byContent[c] = &added{ID: id, Content: c}
			}
		}
	}
	addedTokens := []*added{}
	for c, a := range byContent {
		if named[c] {
			a.Special = true
		}
		addedTokens = append(addedTokens, a)
	}
	sort.Slice(addedTokens, func(i, j int) bool { return addedTokens[i].ID < addedTokens[j].ID })
	mergeList := make([][2]string, len(merges))
	copy(mergeList, merges)
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	doc := map[string]any{
		"version":        "1.0",
		"truncation":     nil,
		"padding":        nil,
		"added_tokens":   addedTokens,
		"normalizer":     nil,
		"pre_tokenizer":  byteLevel,
		"post_processor": nil,
		"decoder":        byteLevel,
		"model": map[string]any{
			"type":          "BPE",
			"dropout":       nil,
			"unk_token":     nil,
			"fuse_unk":      false,
			"byte_fallback": false,
			"ignore_merges": false,
			"vocab":         vocab,
			"merges":        mergeList,
		},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return FromJSON(data, vp+" + merges.txt")
}

// maxSlowFile bounds each file of a slow tokenizer (vocab.json, merges.txt and their configs).
const maxSlowFile = 256 << 20
