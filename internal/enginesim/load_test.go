package enginesim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/sample"
)

func genRepo(t testing.TB, o sample.Options) *sample.Layout {
	t.Helper()
	l, err := sample.Generate(context.Background(), t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func editEngine(t testing.TB, l *sample.Layout, fn func(string) string) {
	t.Helper()
	data, err := os.ReadFile(l.EngineFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.EngineFile, []byte(fn(string(data))), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadClean(t *testing.T) {
	l := genRepo(t, sample.Options{})
	m, err := Load(context.Background(), l.ModelDir, l.EngineFile, Options{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if m.WeightBytes < l.WeightBytes || len(m.Shards) != len(l.Shards) {
		t.Errorf("read %d bytes from %v, want >= %d from %v", m.WeightBytes, m.Shards, l.WeightBytes, l.Shards)
	}
	if m.MaxModelLen != 8192 || len(m.ServedNames) != 1 || m.ServedNames[0] != sample.DefaultServedName {
		t.Errorf("max len %d, served %v", m.MaxModelLen, m.ServedNames)
	}
	if len(m.LoRAs) != 1 || m.LoRAs[0].Path != filepath.Join(l.ModelDir, "loras", sample.LoRAName) || m.LoRAs[0].Base != sample.DefaultServedName {
		t.Errorf("LoRAs = %+v (mount path not re-rooted?)", m.LoRAs)
	}
	if m.ChatTemplate == nil {
		t.Error("no chat template found in tokenizer_config.json")
	}
}

func TestLoadAWQ(t *testing.T) {
	l := genRepo(t, sample.Options{Quant: "awq", NoLoRA: true})
	m, err := Load(context.Background(), l.ModelDir, l.EngineFile, Options{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if m.Quantization != "awq" {
		t.Errorf("quantization %q", m.Quantization)
	}
}

func TestLoadBroken(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   sample.Options
		break_ func(t *testing.T, l *sample.Layout)
		kind   string
		want   string
	}{
		{"no tokenizer", sample.Options{}, func(t *testing.T, l *sample.Layout) {
			os.Remove(l.Path("model/tokenizer.json"))
		}, "tokenizer", "Can't load tokenizer"},
		{"truncated shard", sample.Options{}, func(t *testing.T, l *sample.Layout) {
			p := filepath.Join(l.ModelDir, l.Shards[1])
			st, _ := os.Stat(p)
			if err := os.Truncate(p, st.Size()-100); err != nil {
				t.Fatal(err)
			}
		}, "weights", "Error while deserializing header"},
		{"missing shard", sample.Options{}, func(t *testing.T, l *sample.Layout) {
			os.Remove(filepath.Join(l.ModelDir, l.Shards[1]))
		}, "weights", "weights were not initialized"},
		{"missing LoRA adapter", sample.Options{}, func(t *testing.T, l *sample.Layout) {
			os.RemoveAll(l.Path("model/loras/" + sample.LoRAName))
		}, "lora", "Loading lora sql-lora failed: No adapter found"},
		{"LoRA rank over max", sample.Options{}, func(t *testing.T, l *sample.Layout) {
			editEngine(t, l, func(s string) string { return strings.Replace(s, "max-lora-rank: 16", "max-lora-rank: 1", 1) })
		}, "lora", "greater than max_lora_rank"},
		{"quantization mismatch", sample.Options{Quant: "awq", NoLoRA: true}, func(t *testing.T, l *sample.Layout) {
			editEngine(t, l, func(s string) string { return strings.Replace(s, "quantization: awq", "quantization: gptq", 1) })
		}, "quantization", "Quantization method specified in the model config (awq) does not match"},
		{"quantization without quantized checkpoint", sample.Options{NoLoRA: true}, func(t *testing.T, l *sample.Layout) {
			editEngine(t, l, func(s string) string { return s + "quantization: awq\n" })
		}, "quantization", "Cannot find the config file for awq"},
		{"max-model-len over limit", sample.Options{}, func(t *testing.T, l *sample.Layout) {
			editEngine(t, l, func(s string) string { return strings.Replace(s, "max-model-len: 8192", "max-model-len: 200000", 1) })
		}, "max-model-len", "User-specified max_model_len (200000) is greater than the derived max_model_len (max_position_embeddings=131072"},
		{"missing architecture", sample.Options{}, func(t *testing.T, l *sample.Layout) {
			l.MutateJSON("model/config.json", func(d map[string]any) error { delete(d, "architectures"); return nil })
		}, "architecture", "No model architectures are specified"},
		{"unknown architecture", sample.Options{}, func(t *testing.T, l *sample.Layout) {
			l.MutateJSON("model/config.json", func(d map[string]any) error { d["architectures"] = []any{"FooForCausalLM"}; return nil })
		}, "architecture", "Model architectures ['FooForCausalLM'] are not supported"},
		{"unknown engine key", sample.Options{}, func(t *testing.T, l *sample.Layout) {
			editEngine(t, l, func(s string) string { return s + "max-modle-len: 10\n" })
		}, "config", "unrecognized arguments: --max-modle-len"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := genRepo(t, tc.opts)
			if tc.break_ != nil {
				tc.break_(t, l)
			}
			_, err := Load(context.Background(), l.ModelDir, l.EngineFile, Options{})
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Load err = %v, want a *LoadError", err)
			}
			if le.Kind != tc.kind || !strings.Contains(le.Msg, tc.want) {
				t.Errorf("Load err = [%s] %s\nwant [%s] containing %q", le.Kind, le.Msg, tc.kind, tc.want)
			}
		})
	}
}

func TestLoadLongMaxModelLenAllowed(t *testing.T) {
	l := genRepo(t, sample.Options{NoLoRA: true})
	editEngine(t, l, func(s string) string { return strings.Replace(s, "max-model-len: 8192", "max-model-len: 200000", 1) })
	env := func(k string) string {
		if k == "VLLM_ALLOW_LONG_MAX_MODEL_LEN" {
			return "1"
		}
		return ""
	}
	m, err := Load(context.Background(), l.ModelDir, l.EngineFile, Options{Getenv: env})
	if err != nil || m.MaxModelLen != 200000 {
		t.Fatalf("Load = %v, %v", m, err)
	}
}

func TestLoadHonoursContext(t *testing.T) {
	l := genRepo(t, sample.Options{NoLoRA: true})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Load(ctx, l.ModelDir, l.EngineFile, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Load with cancelled ctx = %v", err)
	}
}
