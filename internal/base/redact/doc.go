// Package redact keeps secrets and terminal control sequences out of everything Lifeboat shows:
// Redact and RedactStrings replace secret-looking values, TerminalSafe and Sanitize make a peer's
// text safe to print. providers re-exports it for the product layers (providers/redact.go).
package redact
