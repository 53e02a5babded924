package lint

// modelRules check the model repository: config, tokenizer, chat template, weights, quantization.
// Each rule reads only what it needs; parsed artifacts (config, tokenizers, safetensors headers,
// quantization config) are shared through Context.Memo, see model_context.go.
var modelRules = []Rule{
	{
		ID: "config-missing", Severity: Error,
		Summary: "the manifest has no model/config.json (nor a Mistral-format params.json)",
		Hint:    "add the model's config.json from its source repository and rebuild the manifest",
		Check:   checkConfigMissing,
	},
	{
		ID: "config-invalid", Severity: Error,
		Summary: "model/config.json does not parse (invalid JSON or a field of the wrong type)",
		Hint:    "restore config.json from the source repository; the message names the field at fault",
		Check:   checkConfigInvalid,
	},
	{
		ID: "config-architecture", Severity: Error,
		Summary: "model/config.json lacks a non-empty architectures list or model_type, so vLLM cannot pick a model class",
		Hint:    "restore architectures and model_type from the base model's config.json",
		Check:   checkConfigArchitecture,
	},
	{
		ID: "tokenizer-missing", Severity: Error,
		Summary: "no usable tokenizer: tokenizer.json, tokenizer.model, vocab.json + merges.txt, tekken.json or *.tiktoken",
		Hint:    "copy the tokenizer files of the model (tokenizer.json at least) into the repository and rebuild the manifest",
		Check:   checkTokenizerMissing,
	},
	{
		ID: "tokenizer-invalid", Severity: Error,
		Summary: "a tokenizer file (tokenizer.json, tokenizer.model, vocab.json, merges.txt, tokenizer_config.json, …) does not parse",
		Hint:    "re-download the tokenizer files from the model's source repository",
		Check:   checkTokenizerInvalid,
	},
	{
		ID: "processor-config-missing", Severity: Error,
		Summary: "a multimodal model (config.json has a vision_config) without preprocessor_config.json / processor_config.json, which vLLM loads at start-up",
		Hint:    "copy preprocessor_config.json (and processor_config.json when the model has one) from the model's source repository",
		Check:   checkProcessorMissing,
	},
	{
		ID: "harmony-encoding-missing", Severity: Warning,
		Summary: "a gpt-oss model whose bundle lacks the o200k_base tiktoken encoding that vLLM's harmony chat rendering needs offline",
		Hint:    "add o200k_base.tiktoken to the bundle and point TIKTOKEN_ENCODINGS_BASE at its directory in the deployment",
		Check:   checkHarmonyEncoding,
	},
	{
		ID: "remote-code-missing", Severity: Error,
		Summary: "trust-remote-code is on and an auto_map of config.json or tokenizer_config.json names a .py module the manifest does not have",
		Hint:    "copy the model's remote-code .py files (configuration_*.py, modeling_*.py, tokenization_*.py) into the repository and rebuild the manifest",
		Check:   checkRemoteCodeMissing,
	},
	{
		ID: "tokenizer-vocab-size", Severity: Error,
		Summary: "the tokenizer can emit token ids at or beyond config.json vocab_size",
		Hint:    "use the tokenizer that belongs to these weights (or the config that matches the embedding)",
		Check:   checkTokenizerVocabSize,
	},
	{
		ID: "lfs-pointer", Severity: Error,
		Summary: "a model file is an un-smudged Git LFS pointer, not the file itself",
		Hint:    "run `git lfs pull` (or download with huggingface-cli) in the source repository, then rebuild the manifest",
		Check:   checkLFSPointers,
	},
	{
		ID: "chat-template-missing", Severity: Warning,
		Summary: "no chat template (chat_template.jinja, chat_template.json or tokenizer_config.json chat_template): chat requests fail with HTTP 400",
		Hint:    "add the model's chat_template.jinja, or set chat-template in the engine config; ignore this for a completions-only base model",
		Check:   checkChatTemplateMissing,
	},
	{
		ID: "chat-template-invalid", Severity: Error,
		Summary: "a chat template is not valid Jinja (checked with jinja2's grammar; the message gives the line)",
		Hint:    "fix the template at the line given (compare with the model's original chat template)",
		Check:   checkChatTemplateInvalid,
	},
	{
		ID: "chat-template-render", Severity: Warning,
		Summary: "the chat template fails to render a two-message chat with add_generation_prompt (raise_exception, bad variable use)",
		Hint:    "render it with the real server (POST /tokenize with messages) to confirm, then fix the template",
		Check:   checkChatTemplateRender,
	},
	{
		ID: "generation-config-missing", Severity: Warning,
		Summary: "no generation_config.json: extra stop tokens and the model's sampling defaults are lost",
		Hint:    "copy generation_config.json from the model's source repository (or set generation-config: vllm in the engine config on purpose)",
		Check:   checkGenerationConfigMissing,
	},
	{
		ID: "safetensors-header", Severity: Error,
		Summary: "a .safetensors file (weights or LoRA adapter) has a corrupt, oversized or truncated header",
		Hint:    "re-download the file; a size different from the source repository's means an interrupted download",
		Check:   checkSafetensorsHeaders,
	},
	{
		ID: "safetensors-index", Severity: Error,
		Summary: "model.safetensors.index.json disagrees with the shards: missing or unlisted shards, misplaced or duplicate tensors, wrong total_size",
		Hint:    "re-download the index and the shards together from one revision of the source repository",
		Check:   checkSafetensorsIndex,
	},
	{
		ID: "embedding-vocab-size", Severity: Error,
		Summary: "the embedding (or lm_head) tensor's first dimension differs from config.json vocab_size",
		Hint:    "use the config.json that belongs to these weights",
		Check:   checkEmbeddingVocabSize,
	},
	{
		ID: "weights-config-shape", Severity: Error,
		Summary: "the checkpoint does not have the shape config.json gives the model: the embedding is not hidden_size wide, or its decoder layers are not num_hidden_layers (vLLM fails to load the weights)",
		Hint:    "use the config.json that belongs to these weights, or restore the missing shards",
		Check:   checkWeightsConfigShape,
	},
	{
		ID: "quant-tensors", Severity: Error,
		Summary: "the tensors do not match the declared quantization (AWQ/GPTQ qweight/qzeros/scales[/g_idx], FP8 weight_scale), or quantized tensors have no quantization config",
		Hint:    "use the config that matches the checkpoint (quantization_config in config.json or quantize_config.json), or re-export the checkpoint",
		Check:   checkQuantTensors,
	},
}
