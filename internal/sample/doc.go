// Package sample writes a tiny but real-format model repository — a Llama-architecture Hugging Face
// checkpoint (bf16 or AWQ), byte-level BPE tokenizer, LoRA adapter, vLLM engine config and deployment
// files — deterministically from a seed, for the demo and for tests and benchmarks of Lifeboat.
package sample
