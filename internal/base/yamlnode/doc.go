// Package yamlnode decodes hand-written YAML files (fleet files, drill files) node by node, so
// that every problem is reported as "file:line: field: message" and every problem in a file is
// reported at once, not only the first (Checker, Fields), with "did you mean" for unknown keys.
package yamlnode
