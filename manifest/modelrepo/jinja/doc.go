// Package jinja is Lifeboat's one Jinja front end for Hugging Face chat templates: one lexer
// and one parser with the grammar of Python's jinja2 (what vLLM, through transformers, compiles
// templates with), serving two callers. Check is the strict syntax check the lint runs; Parse
// builds the tree the renderer evaluates. Both fail with a *SyntaxError naming the file, line
// and column ("chat_template.jinja:3:16: …"); Parse also refuses, wrapping ErrUnsupported, the
// few constructs jinja2 accepts that the renderer does not run (include, recursive loops, …).
//
// The renderer renders the way transformers does: trim_blocks and lstrip_blocks, loop controls,
// an immutable sandbox (no attribute starting with "_", no mutation of lists or dicts) and the
// globals chat templates use. Rendering is bounded — a depth limit, a step budget, an
// output-size budget and a context — so a hostile template is an error, never a hang, a stack
// overflow or an out-of-memory.
package jinja
