package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"lifeboat/internal/sample"
)

func (a *app) demoCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "demo",
		Short: "Tools for trying Lifeboat without a real model or cloud account",
		Example: `  lifeboat demo init /tmp/demo
  lifeboat manifest build --model /tmp/demo/model --engine /tmp/demo/engine/engine.yaml --deploy /tmp/demo/deploy --out /tmp/demo.json`,
	}
	c.AddCommand(a.demoInitCmd())
	return c
}

func (a *app) demoInitCmd() *cobra.Command {
	var o sample.Options
	var size string
	c := &cobra.Command{
		Use:   "init DIR",
		Short: "Write a tiny real-format sample model repository, engine config and deployment files",
		Long: `Init writes a small Llama-style model repository whose files have the real formats — config.json
with llama3 RoPE scaling, a byte-level BPE tokenizer.json, a Jinja chat template, generation
config, safetensors shards with an index, a LoRA adapter — plus a vLLM engine config, a
Kubernetes Deployment, a Dockerfile and a lock file:

  DIR/model/    the repository            (--model for manifest build)
  DIR/engine/   engine.yaml               (--engine)
  DIR/deploy/   deployment.yaml, Dockerfile, requirements.lock   (--deploy)

Weights are deterministic pseudo-random bytes; --size scales them up for benchmarks.`,
		Example: `  lifeboat demo init /tmp/demo
  lifeboat demo init /tmp/demo-awq --quant awq
  lifeboat demo init /tmp/big --size 2GiB --shards 4`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.checkOutput("text", "json"); err != nil {
				return err
			}
			if size != "" {
				n, err := parseSize(size)
				if err != nil {
					return usageErr("--size: %v", err)
				}
				o.TargetBytes = n
			}
			l, err := sample.Generate(cmd.Context(), args[0], o)
			if err != nil {
				return withCode(exitUsage, err)
			}
			if a.output == "json" {
				return a.writeJSON(struct {
					Root        string   `json:"root"`
					ModelDir    string   `json:"model_dir"`
					EngineFile  string   `json:"engine_file"`
					DeployDir   string   `json:"deploy_dir"`
					LoRAName    string   `json:"lora_name,omitempty"`
					ServedName  string   `json:"served_name"`
					WeightBytes int64    `json:"weight_bytes"`
					Files       []string `json:"files"`
				}{l.Root, l.ModelDir, l.EngineFile, l.DeployDir, l.LoRAName, l.Options.ServedName, l.WeightBytes, l.Files})
			}
			fmt.Fprintf(a.stdout, "sample repository written to %s\n  model:  %s\n  engine: %s\n  deploy: %s\n",
				l.Root, l.ModelDir, l.EngineFile, l.DeployDir)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.Quant, "quant", "", `quantization of the sample: "" (bf16) or "awq"`)
	f.StringVar(&size, "size", "", "approximate total weight size, e.g. 64MiB, 2GiB (default: tiny)")
	f.IntVar(&o.Shards, "shards", 0, "number of safetensors shards (default 2)")
	f.BoolVar(&o.NoLoRA, "no-lora", false, "omit the LoRA adapter")
	f.Uint64Var(&o.Seed, "seed", 0, "seed of the pseudo-random weights")
	return c
}

// parseSize reads sizes like 512MiB, 2GiB, 1.5GB, 100000.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}}
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(strings.ToUpper(t), strings.ToUpper(u.suffix)) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*mult > 1<<50 {
		return 0, fmt.Errorf("%q is not a size (e.g. 64MiB, 2GiB)", s)
	}
	return int64(v * mult), nil
}
