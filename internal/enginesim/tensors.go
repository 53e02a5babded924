package enginesim

import (
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"lifeboat/manifest/modelrepo"
)

// layerIndex finds the decoder layer number in a tensor name ("model.layers.12.mlp…").
var layerIndex = regexp.MustCompile(`(?:^|\.)layers\.(\d+)\.`)

// checkTensors compares the checkpoint's tensors with config.json and the quantization method
// the way vLLM's weight loading fails: an embedding whose rows are not vocab_size or whose width
// is not hidden_size, fewer or more decoder layers than num_hidden_layers, and the tensor set
// each quantization method loads (AWQ/GPTQ qweight+qzeros+scales(+g_idx), FP8 weight_scale or,
// with weight_block_size, weight_scale_inv of the right shape, MXFP4 *_blocks with *_scales) —
// including quantized tensors whose quantization_config was dropped.
func (m *Model) checkTensors() error {
	text := m.Config.Text
	vocab, hasVocab := cfgInt(text, "vocab_size")
	if !hasVocab && m.Config.VocabSize > 0 {
		vocab, hasVocab = m.Config.VocabSize, true
	}
	hidden, hasHidden := cfgInt(text, "hidden_size")
	for _, name := range []string{"embed_tokens.weight", "lm_head.weight"} {
		t, ok := m.tensorWithSuffix(name)
		if !ok || len(t.Shape) != 2 || isQuantName(t.Name) {
			continue
		}
		rows, cols := t.Shape[0], t.Shape[1]
		wantRows, wantCols := rows, cols
		if hasVocab {
			wantRows = vocab
		}
		if hasHidden {
			wantCols = hidden
		}
		if rows != wantRows || cols != wantCols {
			return loadErr("weights", "AssertionError: Attempted to load weight (torch.Size([%d, %d])) into parameter (torch.Size([%d, %d])): tensor %s has %d rows and width %d, config.json says vocab_size %d, hidden_size %d", rows, cols, wantRows, wantCols, t.Name, rows, cols, wantRows, wantCols)
		}
	}
	if err := m.checkLayers(); err != nil {
		return err
	}
	return m.checkQuantTensors()
}

func (m *Model) checkLayers() error {
	want, ok := cfgInt(m.Config.Text, "num_hidden_layers")
	if !ok {
		return nil
	}
	seen := map[int64]string{}
	for name := range m.tensors {
		if g := layerIndex.FindStringSubmatch(name); g != nil {
			n, _ := strconv.ParseInt(g[1], 10, 64)
			if _, dup := seen[n]; !dup || name < seen[n] {
				seen[n] = name
			}
		}
	}
	if len(seen) == 0 {
		return nil
	}
	for n := int64(0); n < want; n++ {
		if _, ok := seen[n]; !ok {
			return loadErr("weights", "ValueError: Following weights were not initialized from checkpoint: {model.layers.%d.*} (config.json num_hidden_layers is %d; the checkpoint has no tensors for layer %d)", n, want, n)
		}
	}
	extra, _ := cfgInt(m.Config.Text, "num_nextn_predict_layers") // DeepSeek's MTP layers, which vLLM skips
	for n, name := range seen {
		if n >= want+extra {
			return loadErr("weights", "KeyError: '%s' (config.json num_hidden_layers is %d: the checkpoint has a layer %d that the model does not)", name, want, n)
		}
	}
	return nil
}

// checkQuantTensors checks the tensor set of the checkpoint's quantization method.
func (m *Model) checkQuantTensors() error {
	method := m.checkpointQuant
	names := make([]string, 0, len(m.tensors))
	for n := range m.tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	need := func(name, why string) error {
		if _, ok := m.tensors[name]; !ok {
			return loadErr("weights", "ValueError: Following weights were not initialized from checkpoint: {%s} (%s)", name, why)
		}
		return nil
	}
	dropped := func(name, kind string) error {
		return loadErr("weights", "KeyError: '%s' (a %s tensor, but config.json has no quantization_config for it: was the quantization config dropped?)", name, kind)
	}
	blockSize := weightBlockSize(m.Config.Quantization)
	sawBlocks := false
	for _, n := range names {
		t := m.tensors[n]
		switch {
		case strings.HasSuffix(n, ".qweight"):
			base := strings.TrimSuffix(n, ".qweight")
			if method != "awq" && method != "gptq" && method != "awq_marlin" && method != "gptq_marlin" {
				return dropped(n, "AWQ/GPTQ")
			}
			for _, s := range []string{".qzeros", ".scales"} {
				if err := need(base+s, method+" loads qweight, qzeros and scales for every quantized layer"); err != nil {
					return err
				}
			}
			if strings.HasPrefix(method, "gptq") {
				if err := need(base+".g_idx", "GPTQ loads g_idx for every quantized layer"); err != nil {
					return err
				}
			}
		case modelrepo.IsMXFP4Blocks(n, t.DType):
			sawBlocks = true
			if method != "mxfp4" {
				return dropped(n, "MXFP4")
			}
			if err := need(strings.TrimSuffix(n, "_blocks")+"_scales", "MXFP4 loads *_scales beside every *_blocks"); err != nil {
				return err
			}
		case strings.HasSuffix(n, ".weight") && (t.DType == "F8_E4M3" || t.DType == "F8_E5M2"):
			if method != "fp8" && method != "compressed-tensors" && method != "modelopt" {
				return dropped(n, "FP8")
			}
			if blockSize != nil {
				if err := m.checkBlockScale(t, blockSize); err != nil {
					return err
				}
			} else if err := need(n+"_scale", "an FP8 checkpoint keeps weight_scale beside every F8 weight"); err != nil {
				return err
			}
		case strings.HasSuffix(n, ".weight") && (method == "awq" || method == "gptq") && isLinear(n):
			return loadErr("weights", "KeyError: '%s' (config.json declares %s, whose checkpoints keep %s.qweight/qzeros/scales: a bare weight means a mis-exported checkpoint)", n, method, strings.TrimSuffix(n, ".weight"))
		}
	}
	if method == "mxfp4" && !sawBlocks {
		return loadErr("weights", "ValueError: Following weights were not initialized from checkpoint: {*_blocks, *_scales} (quantization_config says mxfp4, but the checkpoint has no U8 *_blocks tensors)")
	}
	return nil
}

// checkBlockScale checks X.weight_scale_inv of a block-quantized FP8 weight: one scale per
// weight_block_size block, i.e. shape [ceil(out/b0), ceil(in/b1)].
func (m *Model) checkBlockScale(w modelrepo.Tensor, bs []int64) error {
	name := w.Name + "_scale_inv"
	s, ok := m.tensors[name]
	if !ok {
		return loadErr("weights", "ValueError: Following weights were not initialized from checkpoint: {%s} (quantization_config sets weight_block_size %v, so every F8 weight needs its weight_scale_inv)", name, bs)
	}
	if len(w.Shape) == 2 && len(bs) == 2 && bs[0] > 0 && bs[1] > 0 {
		want := []int64{(w.Shape[0] + bs[0] - 1) / bs[0], (w.Shape[1] + bs[1] - 1) / bs[1]}
		if len(s.Shape) != 2 || s.Shape[0] != want[0] || s.Shape[1] != want[1] {
			return loadErr("weights", "AssertionError: Attempted to load weight (torch.Size(%v)) into parameter (torch.Size(%v)): %s for a %v weight with weight_block_size %v", s.Shape, want, name, w.Shape, bs)
		}
	}
	return nil
}

func (m *Model) tensorWithSuffix(suffix string) (modelrepo.Tensor, bool) {
	var best modelrepo.Tensor
	found := false
	for n, t := range m.tensors {
		if (n == suffix || strings.HasSuffix(n, "."+suffix)) && (!found || n < best.Name) {
			best, found = t, true
		}
	}
	return best, found
}

func isQuantName(n string) bool {
	return strings.HasSuffix(n, ".qweight") || strings.HasSuffix(n, "_blocks")
}

// isLinear reports whether a weight belongs to a linear projection inside a decoder layer.
func isLinear(n string) bool {
	return layerIndex.MatchString(n) && strings.Contains(n, "_proj.")
}

func weightBlockSize(q *modelrepo.QuantConfig) []int64 {
	if q == nil {
		return nil
	}
	list, ok := q.Raw["weight_block_size"].([]any)
	if !ok || len(list) == 0 {
		return nil
	}
	var out []int64
	for _, v := range list {
		n, ok := jsonInt(v)
		if !ok {
			return nil
		}
		out = append(out, n)
	}
	return out
}

func cfgInt(m map[string]any, key string) (int64, bool) {
	return jsonInt(m[key])
}

func jsonInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	case float64:
		return int64(x), x == float64(int64(x))
	case int64:
		return x, true
	case int:
		return int64(x), true
	}
	return 0, false
}
