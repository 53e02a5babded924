// Package lint checks a DR manifest together with the repository files it describes, so that a
// missing tokenizer, quantization config, RoPE setting, chat template or LoRA adapter is found in
// CI rather than during an outage. Each rule has a stable id, a severity, a message and a hint.
package lint
