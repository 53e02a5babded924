package lint

import (
	"fmt"
	"strconv"
	"strings"

	"lifeboat/manifest/modelrepo"
)

// Checks of how a replica splits the model across accelerators: tensor parallel size against the
// attention heads, pipeline parallel size against the layers, and both against the GPUs the pod
// asks for. Each quotes the check vLLM makes at start-up.

// headCounts reads the attention and key-value heads of the language model as vLLM's
// ModelConfig does (get_total_num_kv_heads). kv is 0 when the model's attention is not one the
// rule can count (MLA, MPT/DBRX, Nemotron-NAS, multi-query).
func headCounts(mc *modelrepo.ModelConfig) (heads, kv int64, ok bool) {
	t := mc.Text
	heads, ok, err := modelrepo.Int(t, "num_attention_heads")
	if err != nil || !ok || heads <= 0 {
		return 0, 0, false
	}
	switch mc.ModelType {
	case "mpt", "dbrx", "nemotron-nas":
		return heads, 0, true
	}
	if _, mla := t["kv_lora_rank"]; mla && t["kv_lora_rank"] != nil {
		return heads, 0, true
	}
	if mq, _ := t["multi_query"].(bool); mq {
		return heads, 0, true
	}
	for _, k := range []string{"n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num"} {
		if v, ok, err := modelrepo.Int(t, k); err == nil && ok && v > 0 {
			return heads, v, true
		}
	}
	return heads, heads, true
}

func checkTensorParallel(c *Context) {
	mc, err := c.ModelConfig()
	if err != nil || mc == nil {
		return
	}
	heads, kv, ok := headCounts(mc)
	for _, r := range c.engineRuns() {
		tp := r.cfg.TensorParallel
		if r.unresolved("tensor-parallel-size") {
			continue
		}
		file, where := r.fileOf("tensor-parallel-size"), r.at("tensor-parallel-size")
		if tp < 1 {
			c.Errorf(file, "", "%s: tensor-parallel-size %d: vLLM needs at least 1", where, tp)
			continue
		}
		if !ok || tp == 1 {
			continue
		}
		if heads%int64(tp) != 0 {
			c.Errorf(file, "", "%s: tensor-parallel-size %d does not divide the model's %d attention heads (model/config.json num_attention_heads): vLLM refuses to start (\"Total number of attention heads (%d) must be divisible by tensor parallel size (%d).\")", where, tp, heads, heads, tp)
			continue
		}
		if kv == 0 {
			continue
		}
		// QKVParallelLinear: fewer key-value heads than ranks are replicated, more are split;
		// either way vLLM's divide() asserts an exact division.
		num, den := kv, int64(tp)
		if int64(tp) >= kv {
			num, den = int64(tp), kv
		}
		if num%den != 0 {
			c.Errorf(file, "", "%s: tensor-parallel-size %d and the model's %d key-value heads (model/config.json) do not divide one another: vLLM fails while building the attention layers (\"%d is not divisible by %d\")", where, tp, kv, num, den)
		}
	}
}

func checkPipelineParallel(c *Context) {
	mc, err := c.ModelConfig()
	if err != nil || mc == nil {
		return
	}
	layers, ok, err := modelrepo.Int(mc.Text, "num_hidden_layers")
	if err != nil || !ok || layers <= 0 {
		return
	}
	for _, r := range c.engineRuns() {
		pp := r.cfg.PipelineParallel
		if r.unresolved("pipeline-parallel-size") {
			continue
		}
		file, where := r.fileOf("pipeline-parallel-size"), r.at("pipeline-parallel-size")
		if pp < 1 {
			c.Errorf(file, "", "%s: pipeline-parallel-size %d: vLLM needs at least 1", where, pp)
			continue
		}
		if part, line, ok := ppPartition(r); ok {
			parts := strings.Split(part, ",")
			sum := int64(0)
			bad := false
			for _, p := range parts {
				n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
				if err != nil {
					c.Errorf(r.file, "", "%s: VLLM_PP_LAYER_PARTITION %q: vLLM refuses to start (\"Invalid partition string: %s\")", at(r.file, line), part, part)
					bad = true
					break
				}
				sum += n
			}
			switch {
			case bad:
			case len(parts) != pp:
				c.Errorf(r.file, "", "%s: VLLM_PP_LAYER_PARTITION %q has %d stages but pipeline-parallel-size is %d (%s): vLLM refuses to start (\"len(partitions)=%d does not match pp_size=%d.\")", at(r.file, line), part, len(parts), pp, where, len(parts), pp)
			case sum != layers:
				c.Errorf(r.file, "", "%s: VLLM_PP_LAYER_PARTITION %q sums to %d layers but the model has %d (model/config.json num_hidden_layers): vLLM refuses to start (\"sum(partitions)=%d does not match num_hidden_layers=%d.\")", at(r.file, line), part, sum, layers, sum, layers)
			}
			continue
		}
		switch {
		case int64(pp) > layers:
			c.Errorf(file, "", "%s: pipeline-parallel-size %d is more than the model's %d hidden layers (model/config.json num_hidden_layers): a pipeline stage would hold no layer", where, pp, layers)
		case layers%int64(pp) != 0:
			c.Warnf(file, "choose a pipeline-parallel-size that divides the layers, or set VLLM_PP_LAYER_PARTITION", "%s: pipeline-parallel-size %d does not divide the model's %d hidden layers: current vLLM gives some stages one layer more (get_pp_indices); releases before v0.6 refuse to start (\"Total number of hidden layers (%d) must be divisible by pipeline parallel size (%d).\")", where, pp, layers, layers, pp)
		}
	}
}

// ppPartition returns a literal VLLM_PP_LAYER_PARTITION of the run's container.
func ppPartition(r *engineRun) (string, int, bool) {
	if r.vc == nil {
		return "", 0, false
	}
	env := modelrepo.NewContainerEnv(r.vc.c)
	v, ok := env.Lookup("VLLM_PP_LAYER_PARTITION")
	if !ok || !v.Known {
		return "", 0, false
	}
	return v.Value, v.Line, true
}

// multiNode reports whether a run spans more than one pod, so one pod's accelerators are not the
// whole world size: a LeaderWorkerSet, Ray, more than one node, or data parallel across pods.
func multiNode(r *engineRun) bool {
	return r.vc.obj.Kind == "LeaderWorkerSet" || r.cfg.NNodes > 1 ||
		strings.EqualFold(r.cfg.ExecutorBackend, "ray") ||
		r.cfg.Has("headless") || r.cfg.Has("data-parallel-start-rank") || r.cfg.Has("data-parallel-address")
}

func checkGPUCount(c *Context) {
	for _, r := range c.engineRuns() {
		if r.vc == nil || r.unresolved("tensor-parallel-size") || r.unresolved("pipeline-parallel-size") {
			continue
		}
		cfg := r.cfg
		world := int64(max(cfg.TensorParallel, 1)) * int64(max(cfg.PipelineParallel, 1))
		dp := cfg.DataParallel
		if cfg.DataParallelLocal > 0 {
			dp = cfg.DataParallelLocal
		}
		need := world * int64(max(dp, 1))
		how := fmt.Sprintf("tensor-parallel-size %d × pipeline-parallel-size %d", max(cfg.TensorParallel, 1), max(cfg.PipelineParallel, 1))
		if dp > 1 {
			how += fmt.Sprintf(" × data-parallel %d", dp)
		}
		where := r.at("tensor-parallel-size")
		if !cfg.Has("tensor-parallel-size") {
			where = r.at("pipeline-parallel-size")
		}
		if multiNode(r) {
			continue // the world spans pods: one pod's request is not the whole of it
		}
		gpus, names := r.vc.c.Exec.GPUs()
		who := r.who()
		switch {
		case gpus == 0 && need > 1:
			c.Errorf(r.file, "request nvidia.com/gpu (or your accelerator's resource) in the container's limits", "%s: %s runs %s = %d ranks (%s) but requests no GPU: vLLM refuses to start (\"World size (%d) is larger than the number of available GPUs (0) in this node.\")", at(r.file, r.vc.c.Line), who, how, need, where, need)
		case gpus > 0 && gpus < need:
			c.Errorf(r.file, "", "%s: %s requests %d accelerator(s) (%s) but runs %s = %d ranks (%s): vLLM refuses to start (\"World size (%d) is larger than the number of available GPUs (%d) in this node.\")", at(r.file, r.vc.c.Exec.AccelLine), who, gpus, names, how, need, where, need, gpus)
		case gpus > need:
			c.Warnf(r.file, "set tensor-parallel-size to the GPUs the pod requests, or request fewer", "%s: %s requests %d accelerator(s) (%s) but runs %s = %d ranks (%s): %d GPU(s) sit idle", at(r.file, r.vc.c.Exec.AccelLine), who, gpus, names, how, need, where, gpus-need)
		}
	}
}
