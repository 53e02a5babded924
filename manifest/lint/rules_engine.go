package lint

// engineRules check the engine config, LoRA adapters and deployment files.
var engineRules = []Rule{
	// Engine config (vllm serve --config).
	{
		ID: "engine-config-missing", Severity: Warning,
		Summary: "the manifest has no engine config, so a replica cannot be started with the same vLLM settings",
		Hint:    "rebuild the manifest with --engine pointing at the file given to vllm serve --config",
		Check:   checkEngineConfigMissing,
	},
	{
		ID: "engine-config-invalid", Severity: Error,
		Summary: "the engine config is not a YAML mapping, has values vLLM rejects, duplicate keys, or short/dashed/underscore key spellings",
		Hint:    "use the long flag names of vllm serve as keys (max-model-len, not max_model_len or -m) with values of the flag's type",
		Check:   checkEngineConfigInvalid,
	},
	{
		ID: "engine-unknown-key", Severity: Error, // vLLM refuses to start on it
		Summary: "the engine config has a key that is not a vllm serve flag (a typo, or a flag removed from vLLM)",
		Hint:    "fix the spelling or remove the key; vLLM refuses to start on unrecognized arguments",
		Check:   checkEngineUnknownKeys,
	},
	{
		ID: "engine-path-unresolved", Severity: Error,
		Summary: "a path the engine config names under the model mount is not in the bundle (warning: a path outside the mount, or a Hub id, is not captured)",
		Hint:    "add the file to the model directory and rebuild the manifest, or fix the path in the engine config",
		Check:   checkEnginePaths,
	},
	{
		ID: "engine-revision-unpinned", Severity: Warning,
		Summary: "revision (or tokenizer-revision, code-revision) is set to a branch or tag rather than a 40-hex commit",
		Hint:    "pin the revision to the full commit hash so every replica loads the same files",
		Check:   checkEngineRevision,
	},
	{
		ID: "quant-config-mismatch", Severity: Error,
		Summary: "the engine's quantization differs from the model's quantization config, or names a method whose checkpoint the model is not",
		Hint:    "remove quantization from the engine config (vLLM detects it from config.json) or set it to a method that runs the model's checkpoint",
		Check:   checkQuantMismatch,
	},
	{
		ID: "context-length", Severity: Error,
		Summary: "the engine's max-model-len exceeds the context length vLLM derives from config.json (vLLM refuses to start)",
		Hint:    "lower max-model-len to the derived length, or restore the model's rope_scaling / max_position_embeddings",
		Check:   checkContextLength,
	},
	{
		ID: "rope-scaling-dropped", Severity: Warning,
		Summary: "config.json has no rope_scaling, but its own evidence (an original or initial context length, stranded YaRN/llama3 fields, a rope_theta too small for the length, the family's published pre-training length) says its length needs one: long prompts silently degrade; a rope_scaling without rope_type makes vLLM refuse to start",
		Hint:    "copy rope_scaling from the base model's config.json (or set it with hf-overrides in the engine config)",
		Check:   checkRopeScalingDropped,
	},

	// How the replica splits the model, and whether the parts describe one replica.
	{
		ID: "tensor-parallel", Severity: Error,
		Summary: "tensor-parallel-size does not divide the model's attention heads, or does not divide (or is not divided by) its key-value heads (vLLM refuses to start)",
		Hint:    "choose a tensor-parallel-size that divides num_attention_heads and num_key_value_heads (or is a multiple of the latter)",
		Check:   checkTensorParallel,
	},
	{
		ID: "pipeline-parallel", Severity: Error,
		Summary: "pipeline-parallel-size exceeds the model's hidden layers, or disagrees with VLLM_PP_LAYER_PARTITION (warning: it does not divide the layers)",
		Hint:    "choose a pipeline-parallel-size no larger than num_hidden_layers, and one that divides it",
		Check:   checkPipelineParallel,
	},
	{
		ID: "gpu-count", Severity: Error,
		Summary: "a single-pod vLLM container requests fewer GPUs than tensor × pipeline (× data) parallel ranks (warning: more, which sit idle)",
		Hint:    "request as many GPUs (nvidia.com/gpu limits) as tensor-parallel-size × pipeline-parallel-size",
		Check:   checkGPUCount,
	},
	{
		ID: "replica-mismatch", Severity: Error,
		Summary: "a vLLM container loads something other than the bundle's model (a Hub id, vLLM's default), or never reads the bundle's engine config, so the model, engine config and deployment do not describe one replica (warning: a value is unknown, --config names another file, or the command line overrides the engine config)",
		Hint:    "serve the mounted bundle model and pass --config with the bundle's engine config",
		Check:   checkReplicaMismatch,
	},
	{
		ID: "served-model-name", Severity: Error,
		Summary: "a vLLM container serves the model under a name other than the engine config's served-model-name, or an empty one",
		Hint:    "serve the name the engine config gives, or read the engine config with --config",
		Check:   checkServedModelName,
	},

	// LoRA adapters.
	{
		ID: "lora-missing", Severity: Error,
		Summary: "an adapter named in lora-modules is not in the bundle with adapter_config.json and adapter_model.safetensors (or .bin)",
		Hint:    "put the adapter directory under the model directory, or fix its path in lora-modules, and rebuild the manifest",
		Check:   checkLoRAMissing,
	},
	{
		ID: "lora-not-enabled", Severity: Error,
		Summary: "lora-modules is set but enable-lora is not true",
		Hint:    "add enable-lora: true to the engine config",
		Check:   checkLoRANotEnabled,
	},
	{
		ID: "lora-invalid", Severity: Error,
		Summary: "an adapter_config.json does not parse, is not a LoRA adapter, or lacks r, lora_alpha or target_modules",
		Hint:    "re-export the adapter with PEFT (save_pretrained) so adapter_config.json is complete",
		Check:   checkLoRAInvalid,
	},
	{
		ID: "lora-rank", Severity: Error,
		Summary: "an adapter's rank r exceeds the engine's max-lora-rank, or max-lora-rank is not a value vLLM allows",
		Hint:    "set max-lora-rank to one of 1, 8, 16, 32, 64, 128, 256, 320, 512 that is at least every adapter's r",
		Check:   checkLoRARank,
	},
	{
		ID: "lora-unsupported", Severity: Error,
		Summary: "an adapter uses a PEFT feature vLLM rejects: use_dora, or a non-empty modules_to_save",
		Hint:    "retrain or re-export the adapter without DoRA and with modules_to_save: null",
		Check:   checkLoRAUnsupported,
	},
	{
		ID: "lora-base-model", Severity: Error,
		Summary: "an adapter's base_model_name_or_path does not match the served model (warning when either side is unknown)",
		Hint:    "serve the adapter with the base model it was trained on, or correct base_model_name_or_path",
		Check:   checkLoRABaseModel,
	},

	// Deployment files.
	{
		ID: "deploy-missing", Severity: Warning,
		Summary: "the manifest has no deployment files, so a replica's serving setup is not captured",
		Hint:    "rebuild the manifest with --deploy pointing at the Kubernetes manifests and Dockerfile",
		Check:   checkDeployMissing,
	},
	{
		ID: "deploy-yaml-invalid", Severity: Error,
		Summary: "a deployment YAML file does not parse, or a Kubernetes object lacks apiVersion or kind",
		Hint:    "fix the YAML (kubectl apply --dry-run=client -f FILE shows the same errors)",
		Check:   checkDeployYAML,
	},
	{
		ID: "deploy-image-unpinned", Severity: Warning,
		Summary: "a container image or Dockerfile FROM is referenced by tag instead of an @sha256 digest",
		Hint:    "pin the image by digest (image@sha256:…) so a replica runs the same vLLM build",
		Check:   checkDeployImages,
	},
	{
		ID: "deploy-model-mount", Severity: Error,
		Summary: "a Kubernetes container running vLLM mounts no volume at the engine's model path or a parent of it",
		Hint:    "add a volumeMount whose mountPath is the model path (or a parent directory) of the engine config",
		Check:   checkDeployModelMount,
	},
	{
		ID: "deploy-secret", Severity: Error,
		Summary: "a deployment file holds a secret value: a Secret with data or stringData, a credential in an env value, or a literal of a known token format (hf_…, sk-…, AKIA…, ghp_…)",
		Hint:    "remove the value from the deployment file, rotate it (it has been copied with the manifest), create the Secret in each cluster and reference it with valueFrom.secretKeyRef; then rebuild the manifest",
		Check:   checkDeploySecrets,
	},
}
