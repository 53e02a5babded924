// Package jinja is the one Jinja front end for Hugging Face chat templates: one lexer and
// parser with jinja2's grammar, serving the lint's strict Check and the renderer's Parse, both
// failing with a *SyntaxError that names the file, line and column.
//
// jinja2 is what vLLM, through transformers, compiles templates with. Parse also refuses,
// wrapping ErrUnsupported, the few constructs jinja2 accepts that the renderer does not run
// (include, recursive loops, …).
//
// The renderer renders the way transformers does: trim_blocks and lstrip_blocks, loop controls,
// an immutable sandbox (no attribute starting with "_", no mutation of lists or dicts) and the
// globals chat templates use. Rendering is bounded — a depth limit, a step budget, an
// output-size budget and a context — so a hostile template is an error, never a hang, a stack
// overflow or an out-of-memory.
package jinja
