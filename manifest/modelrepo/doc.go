// Package modelrepo parses the files of a Hugging Face model repository and its vLLM deployment
// the way vLLM reads them — config.json, safetensors headers, tokenizers, quantization and LoRA
// configs, engine config YAML, Kubernetes manifests — rejecting malformed input with clear errors.
package modelrepo
