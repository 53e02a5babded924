package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"lifeboat/internal/sample"
	"lifeboat/providers"
	"lifeboat/providers/localfile"
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

// The files `make demo` leaves in its directory (.demo): democlouds writes the env file (the
// clouds' endpoints and throwaway credentials, mode 0600) and the Makefile the pid file.
const (
	demoCloudsEnv = "clouds.env"
	demoCloudsPID = "clouds.pid"
)

// demoCloudsHint puts what is true in place of a store's hint when a command on one of `make
// demo`'s fleet files (.demo/drill/fleet.yaml, .demo/fleet.yaml) could not reach its replicas:
// the store says "set GOOGLE_APPLICATION_CREDENTIALS", but the demo's clouds are local
// emulators that are stopped (make demo stops them as it ends unless KEEP=1), or running with
// their endpoints and credentials not loaded into this shell. Any other error, or a fleet that
// is not the demo's, is returned as it is. The error's kind (and so the exit status) is kept.
func demoCloudsHint(fleetFile string, err error) error {
	switch providers.KindOf(err) {
	case providers.KindMisconfigured, providers.KindUnreachable, providers.KindTimeout, providers.KindDenied, providers.KindNotFound:
	default:
		return err
	}
	dir, ok := demoDir(fleetFile)
	if !ok {
		return err
	}
	env := filepath.Join(dir, demoCloudsEnv)
	envShown, fleetShown := relToWD(env), fleetFile
	var hint string
	if !demoCloudsRunning(dir) {
		hint = fmt.Sprintf("the demo's clouds are stopped (make demo stops its emulators as it ends): run make demo KEEP=1 to keep them up, then: . %s && lifeboat check --fleet %s",
			envShown, fleetShown)
	} else if !demoEnvLoaded(env) {
		hint = fmt.Sprintf("the demo's clouds are running, but this shell has not loaded their endpoints and credentials: . %s && lifeboat check --fleet %s",
			envShown, fleetShown)
	} else {
		return err
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	if i := strings.Index(msg, " (hint: "); i >= 0 {
		msg = msg[:i] // the store's own hint is about real clouds
	}
	return &hintedError{msg: msg + " (hint: " + hint + ")", err: err}
}

// hintedError is err shown with another message; errors.Is and the exit status still see err.
type hintedError struct {
	msg string
	err error
}

func (e *hintedError) Error() string { return e.msg }
func (e *hintedError) Unwrap() error { return e.err }

// demoDir is the demo's directory when the fleet file is in it or one level down: the directory
// holding clouds.env.
func demoDir(fleetFile string) (string, bool) {
	abs, err := filepath.Abs(fleetFile)
	if err != nil {
		return "", false
	}
	d := filepath.Dir(abs)
	for range 2 {
		if fi, err := os.Stat(filepath.Join(d, demoCloudsEnv)); err == nil && fi.Mode().IsRegular() {
			return d, true
		}
		d = filepath.Dir(d)
	}
	return "", false
}

// demoCloudsRunning reports whether the process in the demo's pid file is alive on this host.
func demoCloudsRunning(dir string) bool {
	b, err := localfile.ReadFile(filepath.Join(dir, demoCloudsPID), 64)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// demoEnvLoaded reports whether every variable the demo's env file exports has its value in this
// process's environment (the file was sourced). The values are compared, never shown.
func demoEnvLoaded(env string) bool {
	b, err := localfile.ReadFile(env, 64<<10)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		kv, ok := strings.CutPrefix(strings.TrimSpace(line), "export ")
		if !ok {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if got, set := os.LookupEnv(k); !set || got != shellUnquote(v) {
			return false
		}
	}
	return true
}

// shellUnquote undoes democlouds' quoting: 'text', with ' written as '\”.
func shellUnquote(s string) string {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], `'\''`, `'`)
	}
	return s
}

// relToWD is name relative to the working directory when it is under it (what to paste).
func relToWD(name string) string {
	wd, err := os.Getwd()
	if err != nil {
		return name
	}
	if r, err := filepath.Rel(wd, name); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return name
}
