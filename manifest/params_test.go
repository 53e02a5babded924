package manifest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/sample"
	"lifeboat/manifest"
)

// gptossRepo writes the gpt-oss fixture (its real tensor names, dtypes and shapes) with
// placeholder tokenizer files: the build reads only config.json and the safetensors headers.
func gptossRepo(t *testing.T) string {
	t.Helper()
	return familyRepo(t, "gptoss")
}

func familyRepo(t *testing.T, family string) string {
	t.Helper()
	tok := t.TempDir()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		must(t, os.WriteFile(filepath.Join(tok, f), []byte("{}"), 0o644))
	}
	dir := filepath.Join(t.TempDir(), family)
	must(t, sample.FamilyRepo(context.Background(), dir, family, tok))
	return dir
}

// TestBuildMXFP4ParamsAndPrecision: gpt-oss experts are U8 *_blocks holding two FP4 values per
// byte, with U8 *_scales (E8M0, one per 32 values) that are not parameters. The count is what the
// model has, and the precision says MXFP4 with the BF16 share beside it.
func TestBuildMXFP4ParamsAndPrecision(t *testing.T) {
	dir := gptossRepo(t)
	m, err := manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's sizes (internal/sample/families.go): hidden 64, intermediate 128, 4 experts,
	// 2 layers, vocab 201088, untied lm_head; 4 query and 2 KV heads of 16.
	const hidden, inter, experts, layers, vocab = 64, 128, 4, 2, 201088
	mxfp4 := int64(layers * experts * (2*inter*hidden + hidden*inter)) // gate_up_proj + down_proj values
	perLayer := int64(64*64 + 32*64 + 32*64 + 64*64 +                  // q, k, v, o
		64 + 32 + 32 + 64 + // their biases
		4 + experts*hidden + experts + // sinks, router weight and bias
		experts*2*inter + experts*hidden + // expert biases
		2*hidden) // layer norms
	bf16 := int64(2*vocab*hidden+hidden) + layers*perLayer
	s := m.Summarize()
	if len(s.Precisions) != 2 || s.Precisions[0].Precision != "bf16" || s.Precisions[0].Params != bf16 ||
		s.Precisions[1].Precision != "mxfp4" || s.Precisions[1].Params != mxfp4 {
		t.Fatalf("precisions %+v, want bf16 %d and mxfp4 %d", s.Precisions, bf16, mxfp4)
	}
	if want := float64(mxfp4) / float64(mxfp4+bf16); s.Precisions[1].Share != want {
		t.Errorf("mxfp4 share %v, want %v", s.Precisions[1].Share, want)
	}
	if m.Model.Config.Precision != "mxfp4" || m.Model.Config.Quantization != "mxfp4" {
		t.Errorf("precision %q quantization %q, want mxfp4 and mxfp4", m.Model.Config.Precision, m.Model.Config.Quantization)
	}
	if m.Model.Config.ParamSize != "26.0M" { // 25,964,240
		t.Errorf("param size %q, total %d", m.Model.Config.ParamSize, mxfp4+bf16)
	}
	// The split survives the validating reader.
	data, _ := m.Marshal()
	back, err := manifest.Parse(data, "m.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Summarize().Precisions; len(got) != 2 || got[1] != s.Precisions[1] {
		t.Errorf("after Parse: %+v", got)
	}
}

// A malformed precision split is refused at parse time, naming the annotation.
func TestParseRefusesMalformedPrecisionShares(t *testing.T) {
	m, err := manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: gptossRepo(t)})
	if err != nil {
		t.Fatal(err)
	}
	good := m.OCI.Annotations[manifest.AnnotationParamsByPrecision]
	for _, v := range []string{"", "mxfp4", "mxfp4=-1", "mxfp4=1,mxfp4=2", "MXFP4=1", "mxfp4=99999999999999999999", "bf16=9000000000000000000,mxfp4=9000000000000000000", "a b=1"} {
		m.OCI.Annotations[manifest.AnnotationParamsByPrecision] = v
		data, _ := m.Marshal()
		if _, err := manifest.Parse(data, "m.json"); err == nil || !strings.Contains(err.Error(), manifest.AnnotationParamsByPrecision) {
			t.Errorf("%q: %v", v, err)
		}
	}
	m.OCI.Annotations[manifest.AnnotationParamsByPrecision] = good
	data, _ := m.Marshal()
	if _, err := manifest.Parse(data, "m.json"); err != nil {
		t.Fatalf("the built value %q is refused: %v", good, err)
	}
}

// FP8 block scales (weight_scale_inv, F32) are not parameters: DeepSeek V3's split is FP8 and
// BF16 only.
func TestBuildFP8ScalesAreNotParams(t *testing.T) {
	m, err := manifest.Build(context.Background(), manifest.BuildOptions{ModelDir: familyRepo(t, "deepseek_v3")})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, p := range m.Summarize().Precisions {
		got[p.Precision] = p.Params
	}
	// 2 layers of q_a 32×64, q_b 96×32, kv_a 24×64, kv_b 128×16, o 64×64, gate/up 128×64, down 64×128.
	const fp8 = 2 * (32*64 + 96*32 + 24*64 + 128*16 + 64*64 + 3*128*64)
	if len(got) != 2 || got["fp8"] != fp8 || got["bf16"] == 0 {
		t.Fatalf("precisions %v, want fp8 %d and bf16 only", got, fp8)
	}
}
