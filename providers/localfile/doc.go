// Package localfile reads local input files — manifests, fleet files, model configs, tokenizers —
// the one way every reader of a file Lifeboat did not write must: only regular files, never more
// than a limit the caller names; CheckDir and PrepareDir refuse unsafe directories.
//
// Only regular files: a FIFO would block the open and ignore signals, /dev/zero never ends. A
// limit: a hostile or mistaken file cannot take the machine's memory.
package localfile
