package modelrepo

// The flag names `vllm serve` accepts, as data. Keys of the engine config (`vllm serve --config
// FILE`) are these names without the leading "--".
//
// Source: vLLM's vllm/engine/arg_utils.py (EngineArgs.add_cli_args, AsyncEngineArgs),
// vllm/entrypoints/openai/cli_args.py (FrontendArgs, make_arg_parser) and
// vllm/utils/argparse_utils.py (FlexibleArgumentParser.load_config_file) on vLLM main of early 2026
// (after v0.13; human_readable_int_or_auto for max-model-len, -cc/-ac short forms), united with the
// flags of v0.10–v0.13 that newer releases still parse. Flags that existed in older releases and
// were removed are in engineLegacyFlags, with a note. Update both tables together when vLLM adds or
// drops flags, and record the version here.
const EngineFlagsVersion = "vLLM main early 2026 (≈ v0.14), with v0.10–v0.13 flags still parsed"

// flagType is how vLLM turns a YAML value into an argument, and what it then accepts.
type flagType uint8

const (
	tAny      flagType = iota // not type-checked
	tStr                      // one scalar (numbers are passed through str())
	tInt                      // Python int(): an integer, or a string of one
	tHumanInt                 // human_readable_int: 4096, "32k" (10^3), "32K" (2^10)
	tLenAuto                  // human_readable_int_or_auto: the above, or -1 / "auto"
	tFloat                    // Python float()
	tBool                     // argparse.BooleanOptionalAction: true/false (false → --no-FLAG)
	tSwitch                   // store_true: true/false (false is dropped)
	tList                     // nargs="+": a scalar or a list of scalars
	tJSON                     // a mapping (sent as JSON) or a JSON string
)

// engineFlags maps every long flag name of `vllm serve` to its value type.
var engineFlags = map[string]flagType{
	// serve subcommand
	"model": tStr, "headless": tSwitch, "api-server-count": tInt, "config": tStr,
	"disable-log-stats": tSwitch, "aggregate-engine-logging": tSwitch,
	"enable-log-requests": tBool, "disable-log-requests": tBool,

	// ModelConfig
	"runner": tStr, "convert": tStr, "tokenizer": tStr, "tokenizer-mode": tStr,
	"trust-remote-code": tBool, "dtype": tStr, "seed": tInt, "hf-config-path": tStr,
	"allowed-local-media-path": tStr, "allowed-media-domains": tList,
	"revision": tStr, "code-revision": tStr, "tokenizer-revision": tStr,
	"max-model-len": tLenAuto, "quantization": tStr, "allow-deprecated-quantization": tBool,
	"enforce-eager": tBool, "enable-return-routed-experts": tBool, "max-logprobs": tInt,
	"logprobs-mode": tStr, "disable-sliding-window": tBool, "disable-cascade-attn": tBool,
	"skip-tokenizer-init": tBool, "enable-prompt-embeds": tBool, "served-model-name": tList,
	"config-format": tStr, "hf-token": tAny, "hf-overrides": tJSON, "pooler-config": tJSON,
	"logits-processor-pattern": tStr, "generation-config": tStr,
	"override-generation-config": tJSON, "enable-sleep-mode": tBool, "model-impl": tStr,
	"override-attention-dtype": tStr, "logits-processors": tList, "io-processor-plugin": tStr,

	// LoadConfig
	"load-format": tStr, "download-dir": tStr, "safetensors-load-strategy": tStr,
	"model-loader-extra-config": tJSON, "ignore-patterns": tList, "use-tqdm-on-load": tBool,
	"pt-load-map-location": tAny,

	// AttentionConfig, StructuredOutputsConfig
	"attention-backend": tStr, "reasoning-parser": tStr, "reasoning-parser-plugin": tStr,

	// ParallelConfig
	"distributed-executor-backend": tStr, "pipeline-parallel-size": tInt, "master-addr": tStr,
	"master-port": tInt, "nnodes": tInt, "node-rank": tInt, "tensor-parallel-size": tInt,
	"decode-context-parallel-size": tInt, "dcp-kv-cache-interleave-size": tInt,
	"cp-kv-cache-interleave-size": tInt, "prefill-context-parallel-size": tInt,
	"data-parallel-size": tInt, "data-parallel-rank": tInt, "data-parallel-start-rank": tInt,
	"data-parallel-size-local": tInt, "data-parallel-address": tStr, "data-parallel-rpc-port": tInt,
	"data-parallel-backend": tStr, "data-parallel-hybrid-lb": tBool,
	"data-parallel-external-lb": tBool, "enable-expert-parallel": tBool, "all2all-backend": tStr,
	"enable-dbo": tBool, "ubatch-size": tInt, "dbo-decode-token-threshold": tInt,
	"dbo-prefill-token-threshold": tInt, "disable-nccl-for-dp-synchronization": tBool,
	"enable-eplb": tBool, "eplb-config": tJSON, "expert-placement-strategy": tStr,
	"max-parallel-loading-workers": tInt, "ray-workers-use-nsight": tBool,
	"disable-custom-all-reduce": tBool, "worker-cls": tStr, "worker-extension-cls": tStr,

	// CacheConfig
	"block-size": tInt, "gpu-memory-utilization": tFloat, "kv-cache-memory-bytes": tHumanInt,
	"swap-space": tFloat, "kv-cache-dtype": tStr, "num-gpu-blocks-override": tInt,
	"enable-prefix-caching": tBool, "prefix-caching-hash-algo": tStr, "cpu-offload-gb": tFloat,
	"calculate-kv-scales": tBool, "kv-sharing-fast-prefill": tBool, "mamba-cache-dtype": tStr,
	"mamba-ssm-cache-dtype": tStr, "mamba-block-size": tInt, "mamba-cache-mode": tStr,
	"kv-offloading-size": tFloat, "kv-offloading-backend": tStr,

	// MultiModalConfig
	"limit-mm-per-prompt": tJSON, "enable-mm-embeds": tBool, "media-io-kwargs": tJSON,
	"mm-processor-kwargs": tJSON, "mm-processor-cache-gb": tFloat, "mm-processor-cache-type": tStr,
	"mm-shm-cache-max-object-size-mb": tInt, "mm-encoder-only": tBool, "mm-encoder-tp-mode": tStr,
	"mm-encoder-attn-backend": tStr, "interleave-mm-strings": tBool, "skip-mm-profiling": tBool,
	"video-pruning-rate": tFloat,

	// LoRAConfig
	"enable-lora": tBool, "max-loras": tInt, "max-lora-rank": tInt, "lora-dtype": tStr,
	"enable-tower-connector-lora": tBool, "max-cpu-loras": tInt, "fully-sharded-loras": tBool,
	"default-mm-loras": tJSON, "specialize-active-lora": tBool,

	// ObservabilityConfig
	"show-hidden-metrics-for-version": tStr, "otlp-traces-endpoint": tStr,
	"collect-detailed-traces": tList, "kv-cache-metrics": tBool, "kv-cache-metrics-sample": tFloat,
	"cudagraph-metrics": tBool, "enable-layerwise-nvtx-tracing": tBool, "enable-mfu-metrics": tBool,
	"enable-logging-iteration-details": tBool, "enable-mm-processor-stats": tBool,

	// SchedulerConfig
	"max-num-batched-tokens": tHumanInt, "max-num-seqs": tInt, "max-num-partial-prefills": tInt,
	"max-long-partial-prefills": tInt, "long-prefill-token-threshold": tInt,
	"scheduling-policy": tStr, "enable-chunked-prefill": tBool, "disable-chunked-mm-input": tBool,
	"scheduler-cls": tStr, "disable-hybrid-kv-cache-manager": tBool, "async-scheduling": tBool,
	"stream-interval": tInt,

	// CompilationConfig, VllmConfig
	"cudagraph-capture-sizes": tList, "max-cudagraph-capture-size": tInt,
	"speculative-config": tJSON, "kv-transfer-config": tJSON, "kv-events-config": tJSON,
	"ec-transfer-config": tJSON, "compilation-config": tJSON, "attention-config": tJSON,
	"additional-config": tJSON, "structured-outputs-config": tJSON, "profiler-config": tJSON,
	"weight-transfer-config": tJSON, "optimization-level": tAny,

	// FaultToleranceConfig (recent main)
	"enable-fault-tolerance": tBool, "shutdown-on-fault-tolerance-failure": tBool,
	"engine-recovery-timeout": tInt, "internal-fault-report-port": tInt,
	"external-fault-notify-port": tInt, "gloo-comm-timeout": tInt,

	// FrontendArgs (OpenAI-compatible server)
	"host": tStr, "port": tInt, "uds": tStr, "uvicorn-log-level": tStr,
	"disable-uvicorn-access-log": tBool, "allow-credentials": tBool,
	"allowed-origins": tAny, "allowed-methods": tAny, "allowed-headers": tAny, // json.loads each
	"api-key": tList, "lora-modules": tAny, // lora-modules is parsed specially
	"chat-template": tStr, "chat-template-content-format": tStr,
	"trust-request-chat-template": tBool, "response-role": tStr,
	"ssl-keyfile": tStr, "ssl-certfile": tStr, "ssl-ca-certs": tStr, "enable-ssl-refresh": tBool,
	"ssl-cert-reqs": tInt, "ssl-ciphers": tStr, "root-path": tStr, "middleware": tAny,
	"return-tokens-as-token-ids": tBool, "disable-frontend-multiprocessing": tBool,
	"enable-request-id-headers": tBool, "enable-auto-tool-choice": tBool,
	"exclude-tools-when-tool-choice-none": tBool, "tool-call-parser": tStr,
	"tool-parser-plugin": tStr, "tool-server": tStr, "log-config-file": tStr, "max-log-len": tInt,
	"disable-fastapi-docs": tBool, "enable-prompt-tokens-details": tBool,
	"enable-server-load-tracking": tBool, "enable-force-include-usage": tBool,
	"enable-tokenizer-info-endpoint": tBool, "enable-log-outputs": tBool,
	"h11-max-incomplete-event-size": tInt, "h11-max-header-count": tInt, "log-error-stack": tBool,
	"tokens-only": tBool, "default-chat-template-kwargs": tJSON,
}

// engineShortFlags are single-dash aliases; as config keys they are not recognised the same way
// (the loader prefixes "--"), so they are reported with their long name.
var engineShortFlags = map[string]string{
	"q": "quantization", "pp": "pipeline-parallel-size", "tp": "tensor-parallel-size",
	"dcp": "decode-context-parallel-size", "pcp": "prefill-context-parallel-size",
	"dp": "data-parallel-size", "dpn": "data-parallel-rank", "dpr": "data-parallel-start-rank",
	"dpl": "data-parallel-size-local", "dpa": "data-parallel-address",
	"dpp": "data-parallel-rpc-port", "dpb": "data-parallel-backend",
	"dph": "data-parallel-hybrid-lb", "dpe": "data-parallel-external-lb",
	"ep": "enable-expert-parallel", "n": "nnodes", "r": "node-rank",
	"O": "optimization-level", "cc": "compilation-config", "ac": "attention-config",
	"asc": "api-server-count",
}

// engineLegacyFlags existed in earlier vLLM releases and were removed; a release without them
// refuses to start ("unrecognized arguments").
var engineLegacyFlags = map[string]string{
	"task":                                   "removed in v0.12; use runner / convert",
	"rope-scaling":                           "removed in v0.12; use hf-overrides: {rope_scaling: …}",
	"rope-theta":                             "removed in v0.12; use hf-overrides: {rope_theta: …}",
	"override-pooler-config":                 "deprecated in v0.11; use pooler-config",
	"guided-decoding-backend":                "removed in v0.12; use structured-outputs-config",
	"guided-decoding-disable-fallback":       "removed in v0.12; use structured-outputs-config",
	"guided-decoding-disable-any-whitespace": "removed in v0.12; use structured-outputs-config",
	"guided-decoding-disable-additional-properties":  "removed in v0.12; use structured-outputs-config",
	"num-redundant-experts":                          "removed in v0.12; use eplb-config",
	"eplb-window-size":                               "removed in v0.12; use eplb-config",
	"eplb-step-interval":                             "removed in v0.12; use eplb-config",
	"eplb-log-balancedness":                          "removed in v0.12; use eplb-config",
	"cuda-graph-sizes":                               "deprecated in v0.11; use cudagraph-capture-sizes",
	"disable-mm-preprocessor-cache":                  "deprecated in v0.11; use mm-processor-cache-gb: 0",
	"enable-multimodal-encoder-data-parallel":        "deprecated in v0.11; use mm-encoder-tp-mode: data",
	"lora-extra-vocab-size":                          "removed in v0.12",
	"num-lookahead-slots":                            "removed after v0.11",
	"enable-lora-bias":                               "removed in v0.11",
	"long-lora-scaling-factors":                      "removed in v0.10",
	"max-seq-len-to-capture":                         "removed in v0.11; use max-cudagraph-capture-size",
	"use-v2-block-manager":                           "removed in v0.7",
	"num-scheduler-steps":                            "removed in v0.10 (multi-step scheduling)",
	"multi-step-stream-outputs":                      "removed in v0.10 (multi-step scheduling)",
	"speculative-model":                              "removed in v0.8; use speculative-config",
	"num-speculative-tokens":                         "removed in v0.8; use speculative-config",
	"speculative-draft-tensor-parallel-size":         "removed in v0.8; use speculative-config",
	"speculative-max-model-len":                      "removed in v0.8; use speculative-config",
	"speculative-disable-by-batch-size":              "removed in v0.8; use speculative-config",
	"speculative-model-quantization":                 "removed in v0.8; use speculative-config",
	"speculative-disable-mqa-scorer":                 "removed in v0.8; use speculative-config",
	"ngram-prompt-lookup-max":                        "removed in v0.8; use speculative-config",
	"ngram-prompt-lookup-min":                        "removed in v0.8; use speculative-config",
	"spec-decoding-acceptance-method":                "removed in v0.8; use speculative-config",
	"typical-acceptance-sampler-posterior-threshold": "removed in v0.8",
	"typical-acceptance-sampler-posterior-alpha":     "removed in v0.8",
	"disable-logprobs-during-spec-decoding":          "removed in v0.8",
	"qlora-adapter-name-or-path":                     "removed in v0.10",
	"tokenizer-pool-size":                            "removed in v0.9",
	"tokenizer-pool-type":                            "removed in v0.9",
	"tokenizer-pool-extra-config":                    "removed in v0.9",
	"enable-prompt-adapter":                          "removed in v0.10",
	"max-prompt-adapters":                            "removed in v0.10",
	"max-prompt-adapter-token":                       "removed in v0.10",
	"device":                                         "removed in v0.10; the platform is detected",
	"preemption-mode":                                "removed in v0.10",
	"scheduler-delay-factor":                         "removed in v0.10",
	"disable-async-output-proc":                      "removed in v0.10",
	"override-neuron-config":                         "removed in v0.10",
	"enable-reasoning":                               "removed in v0.10; reasoning-parser alone enables it",
	"worker-use-ray":                                 "removed in v0.6; use distributed-executor-backend: ray",
	"engine-use-ray":                                 "removed in v0.6",
	"max-context-len-to-capture":                     "removed in v0.6",
	"intial-incremental-detokenization-offset":       "removed in v0.8",
}

// EngineQuantMethods is how vLLM names quantization methods in the engine's `quantization`, and
// what each needs from the checkpoint. ModelMethods lists the quant_method values of a model's
// quantization config that the engine method accepts (vLLM's override_quantization_method and
// the equality check in ModelConfig._verify_quantization). Online methods quantize an
// unquantized checkpoint at load time, so a model without a quantization config is fine for them.
var EngineQuantMethods = map[string]struct {
	ModelMethods []string
	Online       bool
}{
	"awq":                {ModelMethods: []string{"awq"}},
	"awq_marlin":         {ModelMethods: []string{"awq"}},
	"auto_awq":           {ModelMethods: []string{"awq"}},
	"cpu_awq":            {ModelMethods: []string{"awq"}},
	"gptq":               {ModelMethods: []string{"gptq"}},
	"gptq_marlin":        {ModelMethods: []string{"gptq"}},
	"gptq_marlin_24":     {ModelMethods: []string{"gptq"}},
	"gptq_bitblas":       {ModelMethods: []string{"gptq"}},
	"auto_gptq":          {ModelMethods: []string{"gptq"}},
	"bitblas":            {ModelMethods: []string{"gptq", "bitblas"}},
	"marlin":             {ModelMethods: []string{"awq", "gptq", "marlin"}},
	"moe_wna16":          {ModelMethods: []string{"awq", "gptq"}},
	"ipex":               {ModelMethods: []string{"awq", "gptq"}},
	"compressed-tensors": {ModelMethods: []string{"compressed-tensors"}},
	"compressed_tensors": {ModelMethods: []string{"compressed-tensors"}},
	"modelopt":           {ModelMethods: []string{"modelopt"}},
	"modelopt_fp4":       {ModelMethods: []string{"modelopt", "modelopt_fp4"}},
	"modelopt_mxfp8":     {ModelMethods: []string{"modelopt", "modelopt_mxfp8"}},
	"modelopt_mixed":     {ModelMethods: []string{"modelopt", "modelopt_mixed"}},
	"quark":              {ModelMethods: []string{"quark"}},
	"fbgemm_fp8":         {ModelMethods: []string{"fbgemm_fp8"}},
	"fp_quant":           {ModelMethods: []string{"fp_quant"}},
	"petit_nvfp4":        {ModelMethods: []string{"modelopt", "modelopt_fp4"}},
	"mxfp4":              {ModelMethods: []string{"mxfp4"}},
	"gpt_oss_mxfp4":      {ModelMethods: []string{"mxfp4"}},
	"hqq":                {ModelMethods: []string{"hqq"}},
	"aqlm":               {ModelMethods: []string{"aqlm"}},
	"qqq":                {ModelMethods: []string{"qqq"}},
	"auto-round":         {ModelMethods: []string{"auto-round", "intel/auto-round"}},
	"deepseek_v4_fp8":    {ModelMethods: []string{"fp8"}},
	"humming":            {ModelMethods: []string{"humming"}},
	"gguf":               {ModelMethods: []string{"gguf"}},
	// Online (load-time) quantization: an unquantized checkpoint is what they expect.
	"fp8":                          {ModelMethods: []string{"fp8"}, Online: true},
	"bitsandbytes":                 {ModelMethods: []string{"bitsandbytes"}, Online: true},
	"experts_int8":                 {Online: true},
	"inc":                          {ModelMethods: []string{"inc", "auto-round", "intel/auto-round"}, Online: true},
	"torchao":                      {ModelMethods: []string{"torchao"}, Online: true},
	"online":                       {Online: true},
	"fp8_per_tensor":               {Online: true},
	"fp8_per_block":                {Online: true},
	"fp8_per_channel":              {Online: true},
	"int8_per_channel_weight_only": {Online: true},
	"nvfp4_per_token":              {Online: true},
	"mxfp8":                        {Online: true},
	"ptpc_fp8":                     {Online: true},
	"deepspeedfp":                  {Online: true},
	"tpu_int8":                     {Online: true},
	"rtn":                          {Online: true},
}

// NormalizeModelQuantMethod applies vLLM's normalisation of a model's quant_method (lower case,
// compressed_tensors → compressed-tensors).
func NormalizeModelQuantMethod(m string) string {
	m = toLowerASCII(m)
	if m == "compressed_tensors" {
		return "compressed-tensors"
	}
	return m
}

func toLowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
