// Package lint checks a DR manifest together with the repository files it describes, so that a
// missing tokenizer, quantization config, RoPE setting, chat template or LoRA adapter is found in
// CI rather than during an outage. Each rule has a stable id, a severity, a message and a hint.
//
// rules_model.go, rules_engine.go and rules_manifest.go are the rule table (Rules,
// docs/lint-rules.md); model_*.go check the model repository, engine_*.go the engine config and
// deployment files against it; lint.go runs them (Run, RunWith) into a Report; open.go and
// source.go read the files from a directory, a bundle or a store.
package lint
