package lint

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"lifeboat/manifest/modelrepo"
)

// modelLayerIndex finds the decoder layer number in a language-model tensor name
// ("model.layers.12.mlp…", "model.language_model.layers.3.…").
var modelLayerIndex = regexp.MustCompile(`(?:^|\.)layers\.(\d+)\.`)

// modelTowerParts are the towers of multimodal checkpoints, whose layers are not the language
// model's num_hidden_layers.
var modelTowerParts = []string{"vision", "visual", "audio", "image", "mm_projector", "multi_modal", "encoder."}

// checkWeightsConfigShape compares the checkpoint with the sizes config.json gives the model, as
// vLLM's weight loading does: the embedding's width must be hidden_size (the parameter is built
// from the config, the copy asserts the shapes agree), every layer below num_hidden_layers must
// have tensors ("Following weights were not initialized from checkpoint"), and a layer at or past
// it (beyond DeepSeek's num_nextn_predict_layers MTP layers, which vLLM skips) has no parameter
// to load into (KeyError). Either way vLLM fails at start-up.
func checkWeightsConfigShape(c *Context) {
	cfg, err := c.ModelConfig()
	if err != nil || cfg == nil {
		return
	}
	tensors := c.modelTensorIndex()
	if len(tensors) == 0 {
		return
	}
	names := modelSortedKeys(tensors)
	if hidden, ok, err := modelrepo.Int(cfg.Text, "hidden_size"); err == nil && ok {
		for _, n := range names {
			t := tensors[n]
			if !modelIsEmbeddingTensor(n) || len(t.t.Shape) != 2 || t.t.DType == "U8" || t.t.DType == "I32" || t.t.Shape[1] == hidden {
				continue
			}
			c.Errorf(t.shard, "", "%s: tensor %s has shape %s, but %s hidden_size is %d: vLLM builds the embedding %d wide and fails to load the weights (\"Attempted to load weight (torch.Size(%s)) into parameter\")",
				t.shard, n, modelShapeString(t.t.Shape), modelConfigPath, hidden, hidden, modelShapeString(t.t.Shape))
		}
	}
	want, ok, err := modelrepo.Int(cfg.Text, "num_hidden_layers")
	if err != nil || !ok || want < 0 {
		return
	}
	if _, encDec := cfg.Text["decoder_layers"]; encDec {
		return // encoder-decoder (Whisper): num_hidden_layers counts the encoder's, not model.decoder.layers
	}
	layers := map[int64]modelTensor{} // a tensor of each layer (the first by name)
	for _, n := range names {
		g := modelLayerIndex.FindStringSubmatch(n)
		if g == nil || modelIsTower(n) {
			continue
		}
		i, err := strconv.ParseInt(g[1], 10, 64)
		if err != nil {
			continue
		}
		if _, seen := layers[i]; !seen {
			layers[i] = tensors[n]
		}
	}
	if len(layers) == 0 {
		return
	}
	var missing []string
	for i := int64(0); i < want && len(missing) < 1000; i++ {
		if _, ok := layers[i]; !ok {
			missing = append(missing, strconv.FormatInt(i, 10))
		}
	}
	if len(missing) > 0 {
		c.Errorf(modelShardsLabel(c), "", "%s num_hidden_layers is %d, but the checkpoint has no tensors for layer(s) %s: vLLM fails at start-up (\"Following weights were not initialized from checkpoint: {model.layers.%s.*}\")",
			modelConfigPath, want, strings.Join(missing, ", "), missing[0])
	}
	mtp, _, _ := modelrepo.Int(cfg.Text, "num_nextn_predict_layers")
	var extra []int64
	for i := range layers {
		if i >= want+max(mtp, 0) {
			extra = append(extra, i)
		}
	}
	if len(extra) > 0 {
		sort.Slice(extra, func(a, b int) bool { return extra[a] < extra[b] })
		t := layers[extra[0]]
		c.Errorf(t.shard, "", "%s: the checkpoint has %d layer(s) from %d up that %s num_hidden_layers %d does not (e.g. %s): vLLM has no parameter for them and fails at start-up (KeyError: '%s')",
			t.shard, len(extra), extra[0], modelConfigPath, want, t.t.Name, t.t.Name)
	}
}

func modelIsTower(name string) bool {
	for _, p := range modelTowerParts {
		if strings.Contains(name, p) {
			return true
		}
	}
	return false
}
