// Package sample writes a tiny but real-format model repository deterministically from a seed, for
// the demo and for tests and benchmarks: a Hugging Face checkpoint (bf16 or AWQ), tokenizer, LoRA
// adapter, vLLM engine config and deployment files (Generate), and other families (FamilyRepo).
//
// sample.go and files.go lay out the default Llama-architecture repository and its configs,
// weights.go writes its safetensors, tokenizer.go and corpus.go its byte-level BPE tokenizer,
// families.go the repositories of other model families (from real tokenizer files), and
// breakage.go the helpers tests use to break a repository (EditJSON, EditSafetensors).
package sample
