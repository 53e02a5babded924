// Package modelrepo parses the files of a Hugging Face model repository and its vLLM deployment
// the way vLLM reads them (config.json, safetensors, tokenizers, chat templates, quantization,
// LoRA, engine YAML, Kubernetes manifests), rejecting malformed input with clear errors.
//
// chattemplate.go reads chat templates from tokenizer_config.json and chat_template.json and
// checks and renders them through the Jinja front end in manifest/modelrepo/jinja.
package modelrepo
