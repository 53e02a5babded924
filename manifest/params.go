package manifest

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"

	"lifeboat/manifest/modelrepo"
)

// AnnotationParamsByPrecision, on the manifest, records how the parameters split between
// precisions when the checkpoint mixes them (gpt-oss: MXFP4 experts, BF16 attention and
// embeddings): "mxfp4=19118776320,bf16=1795659840", largest first. Absent when there is one.
const AnnotationParamsByPrecision = "dev.lifeboat.params.by-precision"

// PrecisionShare is the part of the parameters held in one precision.
type PrecisionShare struct {
	Precision string  `json:"precision"`
	Params    int64   `json:"params"`
	Share     float64 `json:"share"` // of all parameters, 0..1
}

// tensorParams returns how many model parameters a tensor holds and their precision, or 0 for
// tensors that are not parameters (quantization scales, zero points, group indices).
//   - MXFP4 (gpt-oss): a U8 "*_blocks" tensor packs two FP4 values per byte; its U8 "*_scales"
//     are E8M0 exponents, one per block of 32 values, not parameters.
//   - AWQ/GPTQ: an I32 ".qweight" packs 32/bits values.
//   - FP8 (DeepSeek V3): the F32 ".weight_scale_inv" of each 128×128 block scales the weight.
func tensorParams(t modelrepo.Tensor, bits int) (int64, string) {
	switch {
	case modelrepo.IsMXFP4Blocks(t.Name, t.DType):
		return 2 * t.Elements(), "mxfp4"
	case modelrepo.IsMXFP4Scales(t.Name, t.DType):
		return 0, ""
	case strings.HasSuffix(t.Name, ".qweight") && bits > 0 && t.DType == "I32":
		return t.Elements() * int64(32/bits), fmt.Sprintf("int%d", bits)
	case strings.HasSuffix(t.Name, ".qzeros"), strings.HasSuffix(t.Name, ".scales"),
		strings.HasSuffix(t.Name, ".g_idx"), strings.HasSuffix(t.Name, "_scale"), strings.HasSuffix(t.Name, "_scale_inv"):
		return 0, ""
	}
	return t.Elements(), dtypePrecision(t.DType)
}

// dtypePrecision names a safetensors dtype the way ModelPack's precision field does.
func dtypePrecision(dtype string) string {
	switch dtype {
	case "BF16":
		return "bf16"
	case "F16":
		return "fp16"
	case "F32":
		return "fp32"
	case "F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ":
		return "fp8"
	}
	return strings.ToLower(dtype)
}

// countParams sums the parameters of the shards by precision, from their headers.
func countParams(ctx context.Context, weights []source, cfg *modelrepo.ModelConfig, log *slog.Logger) map[string]int64 {
	bits := 0
	if cfg != nil && cfg.Quantization != nil {
		bits = cfg.Quantization.Bits
	}
	by := map[string]int64{}
	for _, s := range weights {
		h, err := s.safetensorsHeader(ctx)
		if err != nil {
			log.Warn("cannot count parameters", "path", s.bundle, "err", err)
			return nil
		}
		for _, t := range h.Tensors {
			if n, p := tensorParams(t, bits); n > 0 {
				by[p] += n
			}
		}
	}
	return by
}

// precisionShares orders the counts largest first (ties by name, for determinism).
func precisionShares(by map[string]int64) []PrecisionShare {
	var total int64
	out := make([]PrecisionShare, 0, len(by))
	for p, n := range by {
		out = append(out, PrecisionShare{Precision: p, Params: n})
		total += n
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Params != out[j].Params {
			return out[i].Params > out[j].Params
		}
		return out[i].Precision < out[j].Precision
	})
	for i := range out {
		out[i].Share = float64(out[i].Params) / float64(total)
	}
	return out
}

// formatShares is the annotation value of shares.
func formatShares(shares []PrecisionShare) string {
	parts := make([]string, len(shares))
	for i, s := range shares {
		parts[i] = s.Precision + "=" + strconv.FormatInt(s.Params, 10)
	}
	return strings.Join(parts, ",")
}

// maxShareParams bounds one count (10¹⁵, a thousand times today's largest models) so that
// their sum cannot overflow.
const maxShareParams = 1e15

// parseShares reads the annotation value; malformed values are refused, naming the element.
func parseShares(v string) ([]PrecisionShare, error) {
	by := map[string]int64{}
	for _, el := range strings.Split(v, ",") {
		p, n, ok := strings.Cut(el, "=")
		count, err := strconv.ParseInt(n, 10, 64)
		if !ok || p == "" || strings.TrimFunc(p, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' }) != "" || err != nil || count <= 0 || count > maxShareParams {
			return nil, fmt.Errorf("%q is not <precision>=<count>", el)
		}
		if _, dup := by[p]; dup {
			return nil, fmt.Errorf("precision %q appears twice", p)
		}
		by[p] = count
	}
	return precisionShares(by), nil
}

// PrecisionShares is how the parameters split between precisions, or nil when the manifest does
// not record it (one precision, or built by an older Lifeboat).
func (m *Manifest) PrecisionShares() []PrecisionShare {
	v, ok := m.OCI.Annotations[AnnotationParamsByPrecision]
	if !ok {
		return nil
	}
	s, _ := parseShares(v) // Parse refused a malformed value
	return s
}
