// Package enginesim is a vLLM-compatible engine simulator for drills and tests without GPUs: Load
// reads a model directory the way `vllm serve` does and fails where vLLM would; Server serves
// vLLM's OpenAI-compatible HTTP API over it, with a latency model and fault injection.
//
// load.go, tensors.go and serving_files.go load and check the model (config, weights and their
// quantization, tokenizer, LoRA adapters, engine config, the files vLLM's start-up needs), chat.go
// renders the chat template, server.go and serve.go answer /health, /v1/models, /v1/completions and
// /v1/chat/completions (streamed), and metrics.go exports vLLM's /metrics. The latency model is a
// prefill rate, an inter-token latency and bounded concurrent sequences. `lifeboat engine-sim` runs
// it.
package enginesim
