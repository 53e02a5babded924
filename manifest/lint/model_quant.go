package lint

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"lifeboat/manifest/modelrepo"
)

// modelTensor is a tensor of the model's weights and the shard holding it.
type modelTensor struct {
	shard string
	t     modelrepo.Tensor
}

// modelTensorIndex maps every tensor name of the model shards to where it is. With duplicates
// (reported by safetensors-index) the first shard wins.
func (c *Context) modelTensorIndex() map[string]modelTensor {
	v, _ := c.Memo("model:tensors", func() (any, error) {
		out := map[string]modelTensor{}
		headers := c.SafetensorsHeaders()
		for _, p := range c.modelShards() {
			h, ok := headers[p]
			if !ok {
				continue
			}
			for _, t := range h.Tensors {
				if _, dup := out[t.Name]; !dup {
					out[t.Name] = modelTensor{p, t}
				}
			}
		}
		return out, nil
	})
	return v.(map[string]modelTensor)
}

// modelLinearProjections are the last module names of the linear layers AWQ and GPTQ quantize in
// common architectures (Llama/Mistral/Qwen, GPT-2/NeoX/Falcon/Phi, Mixtral experts).
var modelLinearProjections = map[string]bool{
	"q_proj": true, "k_proj": true, "v_proj": true, "o_proj": true, "qkv_proj": true,
	"gate_proj": true, "up_proj": true, "down_proj": true, "gate_up_proj": true,
	"w1": true, "w2": true, "w3": true, "wqkv": true, "wo": true,
	"c_attn": true, "c_proj": true, "c_fc": true, "query_key_value": true,
	"dense": true, "dense_h_to_4h": true, "dense_4h_to_h": true, "fc1": true, "fc2": true, "out_proj": true,
}

// modelNotQuantizedParts are module paths AWQ/GPTQ exports leave in full precision.
var modelNotQuantizedParts = []string{"vision", "visual", "audio", "mm_projector", "multi_modal", "lm_head"}

// quantFinding gathers tensors of one problem per shard, so a checkpoint with hundreds of broken
// layers gives one line per shard, not one per tensor.
type quantFinding map[string][]string

func (q quantFinding) add(shard, name string) { q[shard] = append(q[shard], name) }

func (q quantFinding) report(c *Context, msg func(shard string, n int, example string) string) {
	for _, shard := range modelSortedKeys(q) {
		names := q[shard]
		sort.Strings(names)
		c.Errorf(shard, "", "%s", msg(shard, len(names), names[0]))
	}
}

func checkQuantTensors(c *Context) {
	cfg, err := c.ModelConfig()
	if err != nil || cfg == nil {
		return // config-invalid / config-missing
	}
	q, err := c.QuantConfig()
	if err != nil {
		c.Errorf("model/", "", "%v", err)
		return
	}
	tensors := c.modelTensorIndex()
	if len(tensors) == 0 {
		return
	}
	if q == nil {
		checkUndeclaredQuant(c, tensors)
		return
	}
	switch q.Method {
	case "awq", "gptq":
		if modelMarlinFormat(q) {
			return // Marlin-repacked checkpoints use other tensor names (B, s)
		}
		checkPackedQuant(c, q, tensors)
	case "fp8":
		checkFP8(c, q, tensors, true)
	case "compressed-tensors", "modelopt", "fbgemm_fp8":
		checkFP8(c, q, tensors, false)
	case "mxfp4":
		checkMXFP4(c, q, tensors)
	}
}

// checkMXFP4 checks an MXFP4 checkpoint: some *_blocks tensors, each with its *_scales.
func checkMXFP4(c *Context, q *modelrepo.QuantConfig, tensors map[string]modelTensor) {
	missing := quantFinding{}
	blocks := 0
	for name, mt := range tensors {
		if !modelrepo.IsMXFP4Blocks(name, mt.t.DType) {
			continue
		}
		blocks++
		if _, ok := tensors[strings.TrimSuffix(name, "_blocks")+"_scales"]; !ok {
			missing.add(mt.shard, name)
		}
	}
	if blocks == 0 {
		c.Errorf(modelShardsLabel(c), "", "%s declares quant_method mxfp4 but no shard holds a U8 *_blocks tensor: the checkpoint is not MXFP4-quantized", q.Source)
		return
	}
	missing.report(c, func(shard string, n int, example string) string {
		return fmt.Sprintf("%s has %d MXFP4 *_blocks tensors without their *_scales (e.g. %s): vLLM cannot dequantize them", shard, n, example)
	})
}

// modelMarlinFormat reports a GPTQ/AWQ checkpoint stored in Marlin's repacked layout.
func modelMarlinFormat(q *modelrepo.QuantConfig) bool {
	format, _ := q.Raw["checkpoint_format"].(string)
	version, _ := q.Raw["version"].(string)
	marlin, _ := q.Raw["is_marlin_format"].(bool)
	return marlin || strings.EqualFold(format, "marlin") || strings.EqualFold(version, "marlin")
}

func modelIsFP8(dtype string) bool {
	return strings.HasPrefix(dtype, "F8_E4M3") || strings.HasPrefix(dtype, "F8_E5M2")
}

// checkUndeclaredQuant reports quantized tensors in a checkpoint no config declares quantized:
// vLLM would build full-precision layers and fail on names and shapes.
func checkUndeclaredQuant(c *Context, tensors map[string]modelTensor) {
	found := quantFinding{}
	for name, mt := range tensors {
		if strings.HasSuffix(name, ".qweight") || strings.HasSuffix(name, ".weight_scale") || strings.HasSuffix(name, ".weight_scale_inv") ||
			strings.HasSuffix(name, ".weight_packed") || modelIsFP8(mt.t.DType) || modelrepo.IsMXFP4Blocks(name, mt.t.DType) {
			found.add(mt.shard, name)
		}
	}
	found.report(c, func(shard string, n int, example string) string {
		return fmt.Sprintf("%s holds %d quantized tensors (e.g. %s) but neither config.json quantization_config nor a quantize_config.json declares a quantization method: vLLM loads it as full precision and fails on the tensor names", shard, n, example)
	})
}

// checkPackedQuant checks AWQ/GPTQ checkpoints: every X.qweight has X.qzeros and X.scales (and
// X.g_idx for GPTQ), and no linear projection is left as a plain X.weight.
func checkPackedQuant(c *Context, q *modelrepo.QuantConfig, tensors map[string]modelTensor) {
	companions := []string{"qzeros", "scales"}
	if q.Method == "gptq" {
		companions = append(companions, "g_idx")
	}
	skip := append([]string{}, modelNotQuantizedParts...)
	if list, ok := q.Raw["modules_to_not_convert"].([]any); ok {
		for _, m := range list {
			if s, ok := m.(string); ok && s != "" {
				skip = append(skip, s)
			}
		}
	}
	_, dynamic := q.Raw["dynamic"] // GPTQModel per-module overrides: bare layers may be intended
	missing, bare := quantFinding{}, quantFinding{}
	packed := 0
	for name, mt := range tensors {
		if x, ok := strings.CutSuffix(name, ".qweight"); ok {
			packed++
			for _, comp := range companions {
				if _, ok := tensors[x+"."+comp]; !ok {
					missing.add(mt.shard, x+"."+comp)
				}
			}
			continue
		}
		x, ok := strings.CutSuffix(name, ".weight")
		if !ok || dynamic || len(mt.t.Shape) != 2 || !modelLinearProjections[x[strings.LastIndexByte(x, '.')+1:]] {
			continue
		}
		if _, ok := tensors[x+".qweight"]; ok || modelContainsAny(x, skip) {
			continue
		}
		bare.add(mt.shard, name)
	}
	src, method := q.Source, strings.ToUpper(q.Method)
	missing.report(c, func(shard string, n int, example string) string {
		return fmt.Sprintf("%s lacks %d tensors that %s layers need (e.g. %s; %s declares %s): an incomplete export", shard, n, method, example, src, q.Method)
	})
	bare.report(c, func(shard string, n int, example string) string {
		return fmt.Sprintf("%s stores %d linear projections unquantized (e.g. %s) although %s declares quant_method %s: a mis-exported checkpoint, vLLM fails on the tensor names", shard, n, example, src, q.Method)
	})
	if packed == 0 && len(bare) == 0 {
		c.Errorf(modelShardsLabel(c), "", "%s declares quant_method %s but no shard holds a .qweight tensor: the checkpoint is not %s-quantized", src, q.Method, method)
	}
}

// checkFP8 checks that every FP8 weight has its weight_scale (weight_scale_inv for block-quantized
// exports). With declared set (quant_method fp8), a checkpoint without FP8 weights is an error.
func checkFP8(c *Context, q *modelrepo.QuantConfig, tensors map[string]modelTensor, declared bool) {
	missing, noInv, badShape := quantFinding{}, quantFinding{}, quantFinding{}
	block := fp8BlockSize(q)
	fp8 := 0
	for name, mt := range tensors {
		x, ok := strings.CutSuffix(name, ".weight")
		if !ok || !modelIsFP8(mt.t.DType) {
			continue
		}
		fp8++
		_, a := tensors[x+".weight_scale"]
		inv, b := tensors[x+".weight_scale_inv"]
		switch {
		case block != nil && !b:
			// Block-wise FP8 (weight_block_size) loads one weight_scale_inv per block.
			noInv.add(mt.shard, name)
		case block != nil && len(mt.t.Shape) == 2:
			want := []int64{(mt.t.Shape[0] + block[0] - 1) / block[0], (mt.t.Shape[1] + block[1] - 1) / block[1]}
			if len(inv.t.Shape) != 2 || inv.t.Shape[0] != want[0] || inv.t.Shape[1] != want[1] {
				badShape.add(inv.shard, fmt.Sprintf("%s %s, want %s", x+".weight_scale_inv", modelShapeString(inv.t.Shape), modelShapeString(want)))
			}
		case !a && !b:
			missing.add(mt.shard, name)
		}
	}
	missing.report(c, func(shard string, n int, example string) string {
		return fmt.Sprintf("%s has %d FP8 weights without a weight_scale next to them (e.g. %s): vLLM cannot dequantize them", shard, n, example)
	})
	noInv.report(c, func(shard string, n int, example string) string {
		return fmt.Sprintf("%s has %d FP8 weights without their weight_scale_inv (e.g. %s), but %s sets weight_block_size %v: vLLM's block-wise FP8 loads one scale per block and fails (\"Following weights were not initialized from checkpoint\")", shard, n, example, q.Source, block)
	})
	badShape.report(c, func(shard string, n int, example string) string {
		return fmt.Sprintf("%s has %d weight_scale_inv tensors whose shape is not one scale per weight_block_size %v block (e.g. %s): vLLM fails to load them (\"Attempted to load weight into parameter\")", shard, n, block, example)
	})
	if declared && fp8 == 0 {
		c.Errorf(modelShardsLabel(c), "", "%s declares quant_method fp8 but no shard holds an F8_E4M3 weight: vLLM expects a serialized FP8 checkpoint", q.Source)
	}
}

// modelShardsLabel is the path a whole-checkpoint finding is reported on: the only shard, or the
// index that lists them.
func modelShardsLabel(c *Context) string {
	if c.HasModelFile(modelIndexRel) {
		return "model/" + modelIndexRel
	}
	if s := c.modelShards(); len(s) > 0 {
		return s[0]
	}
	return "model/"
}

func modelContainsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// fp8BlockSize is quantization_config's weight_block_size ([rows, cols] of one scale), or nil.
func fp8BlockSize(q *modelrepo.QuantConfig) []int64 {
	list, ok := q.Raw["weight_block_size"].([]any)
	if !ok || len(list) != 2 {
		return nil
	}
	out := make([]int64, 2)
	for i, v := range list {
		n, isNum := v.(json.Number)
		if !isNum {
			return nil
		}
		x, err := n.Int64()
		if err != nil || x <= 0 {
			return nil
		}
		out[i] = x
	}
	return out
}
