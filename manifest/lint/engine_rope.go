package lint

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"lifeboat/manifest/modelrepo"
)

// A dropped rope_scaling (seen in quantized re-uploads and hand-edited configs) does not stop
// vLLM: it derives the length from max_position_embeddings and computes the rotary embedding
// with the unscaled frequencies, so prompts past the pre-training length silently degrade. The
// check asks the config itself for evidence that its length was reached by a scaling it no
// longer carries, instead of recognising particular families' fingerprints.

// ropeOnlyKeys mean something only inside rope_scaling (YaRN's beta_fast/beta_slow/mscale,
// Llama 3's frequency factors, LongRoPE's factor lists): next to a missing rope_scaling they are
// what is left of one.
var ropeOnlyKeys = []string{
	"original_max_position_embeddings", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
	"attention_factor", "low_freq_factor", "high_freq_factor", "long_factor", "short_factor",
}

// publishedPretrainLen is the length each family was pre-trained at, as its published configs
// and model cards state, keyed by the language model's model_type and rope_theta (a different
// rope_theta is a different training recipe, e.g. Qwen3-2507's 5e6 at 262144 tokens natively).
// Only families whose every release at that rope_theta agrees are listed: Qwen2.5 base configs
// publish 131072 at rope_theta 1e6 without rope_scaling, so qwen2 is not.
var publishedPretrainLen = []struct {
	modelType string
	theta     float64
	length    int64
	family    string
}{
	{"llama", 500000, 8192, "Llama 3 (3.1 and later reach 131072 with rope_type llama3)"},
	{"qwen3", 1e6, 40960, "Qwen3 (longer only with YaRN, per its model card)"},
	{"qwen3_moe", 1e6, 40960, "Qwen3 MoE (longer only with YaRN, per its model card)"},
	{"gemma3_text", 1e6, 32768, "Gemma 3 (4B and larger reach 131072 with rope_type linear, factor 8)"},
	{"deepseek_v2", 10000, 4096, "DeepSeek V2 (yarn, factor 40)"},
	{"deepseek_v3", 10000, 4096, "DeepSeek V3 / R1 (yarn, factor 40)"},
	{"gpt_oss", 150000, 4096, "gpt-oss (yarn, factor 32)"},
	{"phi3", 10000, 4096, "Phi-3 / Phi-4-mini 128k (longrope)"},
}

// ropeEvidence is one sign that a config's length was reached by a RoPE scaling. Len is the
// pre-scaling length it implies: serving no more than that does not need the scaling.
type ropeEvidence struct {
	Len int64
	Why string
}

// vllmRopeType reads rope_scaling's type the way vLLM's config patch does: rope_type, else the
// legacy type; "su" is longrope. vLLM refuses a rope_scaling without either, or with both
// disagreeing (ValueError at config load); problem says which.
func vllmRopeType(rs map[string]any) (rt, problem string) {
	modern, hasModern := rs["rope_type"].(string)
	legacy, hasLegacy := rs["type"].(string)
	switch {
	case hasModern && hasLegacy && modern != legacy:
		return "", fmt.Sprintf("rope_scaling has rope_type %q and type %q: vLLM refuses to start (\"Found conflicts between 'rope_type=%s' (modern field) and 'type=%s' (legacy field)\")", modern, legacy, modern, legacy)
	case hasModern:
		rt = modern
	case hasLegacy:
		rt = legacy
	default:
		return "", "rope_scaling has no rope_type (nor the legacy type): vLLM refuses to start (\"rope_scaling should have a 'rope_type' key\")"
	}
	if rt == "su" {
		rt = "longrope"
	}
	return rt, ""
}

// number reads a JSON number (config.json) or a YAML one (hf-overrides).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// ropeScalingEvidence collects what in the config says its length of maxPos tokens needs a RoPE
// scaling. rs is a rope_scaling of rope_type default, or nil.
func ropeScalingEvidence(mc *modelrepo.ModelConfig, rs map[string]any, maxPos int64) []ropeEvidence {
	var ev []ropeEvidence
	stranded := func(where string, m map[string]any, keys []string) {
		var found []string
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				continue
			}
			if k == "original_max_position_embeddings" {
				if o, ok := number(m[k]); ok && o > 0 && int64(o) < maxPos {
					ev = append(ev, ropeEvidence{int64(o), fmt.Sprintf("%s original_max_position_embeddings is %d", where, int64(o))})
				}
				continue
			}
			found = append(found, k)
		}
		if len(found) > 0 {
			ev = append(ev, ropeEvidence{0, fmt.Sprintf("%s carries %s, which only a rope_scaling uses", where, strings.Join(found, ", "))})
		}
	}
	stranded("its top level", mc.Text, ropeOnlyKeys)
	if rs != nil {
		stranded("its rope_type default rope_scaling", rs, append([]string{"factor"}, ropeOnlyKeys...))
	}
	if o, ok := number(mc.Text["initial_context_length"]); ok && o > 0 && int64(o) < maxPos {
		// gpt-oss records the length it was trained at before YaRN extended it.
		ev = append(ev, ropeEvidence{int64(o), fmt.Sprintf("initial_context_length (the length before extension) is %d", int64(o))})
	}
	if len(mc.Raw) > 0 && textIsNested(mc) {
		if v, ok := mc.Raw["rope_scaling"]; ok && v != nil {
			ev = append(ev, ropeEvidence{0, "rope_scaling sits at the top level of a multimodal config, but vLLM reads the language model's from text_config"})
		}
	}
	theta, hasTheta := number(mc.Text["rope_theta"])
	if !hasTheta && rs != nil {
		theta, hasTheta = number(rs["rope_theta"])
	}
	if hasTheta && theta > 0 {
		// The slowest rotary dimension turns once every 2π·θ^((d-2)/d) < 2π·θ positions; the base
		// bounds the context a model can learn, and no model is trained natively past that turn.
		if w := 2 * math.Pi * theta; float64(maxPos) > w {
			ev = append(ev, ropeEvidence{int64(w), fmt.Sprintf("rope_theta %s turns its slowest rotary dimension within %d positions, shorter than max_position_embeddings", strconv.FormatFloat(theta, 'g', -1, 64), int64(w))})
		}
		mt := mc.TextModelType()
		for _, p := range publishedPretrainLen {
			if p.modelType == mt && p.theta == theta && p.length < maxPos {
				ev = append(ev, ropeEvidence{p.length, fmt.Sprintf("model_type %s at rope_theta %s is %s, pre-trained at %d tokens", mt, strconv.FormatFloat(theta, 'g', -1, 64), p.family, p.length)})
			}
		}
	}
	return ev
}

// textIsNested reports whether the language model's config is text_config rather than the top level.
func textIsNested(mc *modelrepo.ModelConfig) bool {
	tc, ok := mc.Raw["text_config"].(map[string]any)
	return ok && len(tc) > 0
}

func checkRopeScalingDropped(c *Context) {
	runs := c.engineRuns()
	if len(runs) == 0 {
		checkRopeScalingDroppedRun(c, nil)
	}
	for _, r := range runs {
		checkRopeScalingDroppedRun(c, r)
	}
}

func checkRopeScalingDroppedRun(c *Context, r *engineRun) {
	mc, err := c.ModelConfig()
	if err != nil || mc == nil {
		return
	}
	var cfg *modelrepo.EngineConfig
	path := "model/config.json"
	if r != nil {
		cfg = r.cfg
		mc, _ = overriddenModelConfig(mc, cfg.HFOverrides)
		if _, ok := cfg.HFOverrides["rope_scaling"]; ok {
			path = r.fileOf("hf-overrides")
		}
	}
	rs, err := mc.RopeScaling()
	if err != nil {
		return // config-invalid reports it
	}
	if v, ok := mc.Text["rope_scaling"].(map[string]any); ok {
		if _, problem := vllmRopeType(v); problem != "" {
			c.Errorf(path, "set rope_type in rope_scaling as the base model's config.json has it", "%s: %s", path, problem)
			return
		}
	}
	if rs != nil {
		if rt, _ := vllmRopeType(rs); rt != "default" && rt != "" {
			return // scaled
		}
	}
	maxPos, ok := number(mc.Text["max_position_embeddings"])
	if !ok || maxPos <= 0 {
		return
	}
	ev := ropeScalingEvidence(mc, rs, int64(maxPos))
	if len(ev) == 0 {
		return
	}
	sort.SliceStable(ev, func(i, j int) bool { return ev[i].Len > 0 && (ev[j].Len == 0 || ev[i].Len < ev[j].Len) })
	pre := ev[0].Len
	if cfg != nil && cfg.MaxModelLen > 0 && pre > 0 && cfg.MaxModelLen <= pre {
		return // served within the pre-scaling length
	}
	why := make([]string, len(ev))
	for i, e := range ev {
		why[i] = e.Why
	}
	past := "the pre-scaling length"
	if pre > 0 {
		past = strconv.FormatInt(pre, 10) + " tokens"
	}
	c.Warnf("model/config.json", "", "model/config.json has no rope_scaling, yet its own evidence says max_position_embeddings %d was reached by one: %s; vLLM boots with the unscaled rotary frequencies and prompts past %s silently degrade", int64(maxPos), strings.Join(why, "; "), past)
}
