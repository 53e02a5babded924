package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"lifeboat/internal/base/redact"
	"lifeboat/providers"

	"github.com/spf13/cobra"
)

// app is the state shared by every command: streams, output format, logger. No globals.
type app struct {
	stdin          io.Reader
	rawStdout      io.Writer // data that must pass unchanged (manifest build --out -)
	rawStderr      io.Writer // the progress bar's own escape sequences
	stdout, stderr io.Writer // terminal encoders (termWriter): no control sequence, no secret
	output         string    // text, json or junit; -o yaml is output "json" with yaml set
	yaml           bool      // the result document is rendered as YAML (see document.go)
	logFormat      string    // text or json (--log-format)
	verbose, quiet bool
	log            *slog.Logger
	// known are the credentials this process sent that no pattern finds (a registry's
	// Authorization): the one redaction every printed error and line goes through (termWriter,
	// finish) replaces them, as the stores' own errors do.
	known   *redact.Known
	command string // the command path, for error reports
	getenv  func(string) string

	pending    *yaml.Node // the result document, written by finish with exit_code added
	wroteJUnit bool
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	known := &redact.Known{}
	out, errs := &termWriter{w: stdout, known: known}, &termWriter{w: stderr, known: known}
	defer out.Flush()
	defer errs.Flush()
	a := &app{stdin: stdin, rawStdout: stdout, rawStderr: stderr, stdout: out, stderr: errs, getenv: os.Getenv, known: known}
	root := a.rootCmd()
	root.SetArgs(args)
	root.Annotations = map[string]string{argsAnnotation: strings.Join(args, "\x00")}
	root.SetIn(stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	return a.finish(ctx, unknownRootCommand(root, err))
}

// finish reports err — on stderr, and in the -o format on stdout (a JSON document that always
// carries exit_code, a JUnit document saying why) — and returns the exit status.
func (a *app) finish(ctx context.Context, err error) int {
	code := exitCode(err)
	if sig, ok := interruptedCode(ctx); ok && err != nil {
		code = sig
	}
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.err == nil {
			err = nil // the output already says everything
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(a.stderr, "lifeboat: interrupted")
		}
		fmt.Fprintf(a.stderr, "lifeboat: %v\n", err)
	}
	msg := ""
	if err != nil {
		msg = a.known.Redact(err.Error())
	}
	switch a.output {
	case "json", "yaml":
		a.flushJSON(code, msg)
	case "junit":
		if !a.wroteJUnit && code != exitOK {
			_ = writeJUnit(a.stdout, errorSuites(a.command, code, msg))
		}
	}
	return code
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "lifeboat",
		Short: "Keep multi-region vLLM serving recoverable",
		Example: `  lifeboat demo init /tmp/demo
  lifeboat manifest build --model /tmp/demo/model --engine /tmp/demo/engine/engine.yaml --out dr/manifest.json
  lifeboat manifest lint dr/manifest.json --model /tmp/demo/model
  lifeboat verify --manifest dr/manifest.json s3://dr-use1/llama/ gs://dr-euw4/llama/`,
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.command = cmd.CommandPath()
			if a.output == "yaml" {
				// The same document as -o json, rendered as YAML: every command that writes
				// JSON writes YAML too, through one encoder (document.go).
				a.output, a.yaml = "json", true
			}
			level := slog.LevelWarn
			switch {
			case a.verbose && a.quiet:
				return usageErr("-v and --quiet exclude each other")
			case a.verbose:
				level = slog.LevelDebug
			case a.quiet:
				level = slog.LevelError
			}
			switch a.logFormat {
			case "text", "json":
			default:
				bad := a.logFormat
				a.logFormat = "text"
				a.log = slog.New(a.logHandler(level))
				return usageErr("--log-format %q: want text or json", bad)
			}
			a.log = slog.New(a.logHandler(level))
			a.quietStdout()
			return a.defaultFleet(cmd)
		},
	}
	root.PersistentFlags().StringVarP(&a.output, "output", "o", "text", "output format: text, json or yaml (the same document); junit for manifest lint, verify, check and drill run")
	root.PersistentFlags().StringVar(&a.logFormat, "log-format", "text", "format of the log lines on stderr: text, or json (one object a line, for a log collector)")
	root.PersistentFlags().BoolVarP(&a.verbose, "verbose", "v", false, "log every request to a store or replica (method, host, key, status, attempt) and each retry to stderr; never a credential")
	root.PersistentFlags().BoolVarP(&a.quiet, "quiet", "q", false, "print no text result on stdout and no progress or warnings on stderr, only errors: the exit code tells (for scripts; -o json, yaml and junit are still written)")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json", "yaml", "junit"}, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	root.SetFlagErrorFunc(flagError)
	root.DisableSuggestions = true // the one ranking instead (unknownRootCommand)
	root.AddCommand(a.manifestCmd(), a.verifyCmd(), a.replicateCmd(), a.restoreCmd(), a.probeCmd(), a.bootCmd(), a.engineSimCmd(), a.demoCmd(), a.failoverCmd(), a.drillCmd(), a.checkCmd(), a.versionCmd(), a.watchCmd())
	groupCommands(root)
	root.Version = versionReport() // --version prints what `lifeboat version` prints
	root.SetVersionTemplate("{{.Version}}")
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && c != root && c.RunE == nil && c.Run == nil {
			unknownSubcommand(c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	a.registerCompletions(root)
	return root
}

// quietStdout makes --quiet quiet for every command in one place: the text result (tables,
// summaries, verdict lines) goes nowhere, so a script's log holds only the errors on stderr and
// the exit code tells the outcome. A document asked for with -o json, yaml or junit is written
// all the same (it was asked for explicitly), and so is data a command exists to write
// (manifest build --out -, the completion script: rawStdout and cobra's own output).
func (a *app) quietStdout() {
	if a.quiet && a.output == "text" {
		a.stdout = io.Discard
	}
}

// checkOutput validates -o against the formats a command supports.
func (a *app) checkOutput(formats ...string) error {
	if slices.Contains(formats, "json") {
		formats = append(slices.Clone(formats), "yaml")
	}
	for _, f := range formats {
		if a.output == f && (f != "json" || !a.yaml) || f == "yaml" && a.yaml {
			return nil
		}
	}
	bad := a.output
	if a.yaml {
		bad = "yaml"
	}
	a.output, a.yaml = "text", false // so the error itself is not rendered in an unknown format
	return usageErr("-o %s is not supported here (use one of %s)", bad, strings.Join(formats, ", "))
}

// writeJSON renders v as the command's result document (-o json or -o yaml, see document.go).
// It is written when the command ends (or by flushJSON), with "exit_code" — and "error" when it
// failed — added to an object, so that a failing command's one document says why.
func (a *app) writeJSON(v any) error {
	n, err := resultTree(v)
	if err != nil {
		return err
	}
	a.pending = n
	return nil
}

// maxPeerText bounds one peer-supplied value in a result document (a journal's detail, a lock's
// holder): generous, as a document is read by programs, but never unbounded.
const maxPeerText = 2000

// writePeerJSON is writeJSON for a document made of what peers wrote (the failover journal and
// lock, drill records): every string is rendered on one line — newlines, controls and
// separators a space, at most maxPeerText runes — as the text output renders it
// (providers.Sanitize), so that no holder, reason or operation can forge a line or a field
// in a log or a line-oriented reader. ptr is changed in place.
func (a *app) writePeerJSON(ptr any) error {
	redact.SanitizeStrings(ptr, maxPeerText)
	return a.writeJSON(ptr)
}

// flushJSON writes the pending result document (or {"error","exit_code"} when there is none and
// the command failed).
func (a *app) flushJSON(code int, msg string) {
	doc := a.pending
	a.pending = nil
	if doc == nil {
		if code == exitOK {
			return
		}
		doc = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	if doc.Kind == yaml.MappingNode {
		if msg != "" {
			setMember(doc, "error", strNode(providers.TerminalSafe(msg)))
		}
		setMember(doc, "exit_code", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(code)})
	}
	format := "json"
	if a.yaml || a.output == "yaml" {
		format = "yaml"
	}
	_ = encodeTree(a.stdout, doc, format)
}

// termWriter is the terminal encoder every text, log and document line passes last on its way to
// stdout or stderr: every rune a terminal could act on (ESC, other controls but newline and tab,
// C1, U+2028/U+2029, bidi overrides) becomes U+FFFD (providers.TerminalSafe), and a secret that
// escaped redaction of its value becomes REDACTED (providers.RedactStream, which never decodes
// and never changes a quote, backslash, <, > or &, so a JSON or JUnit document keeps its
// structure). A rune split across writes is held until it is whole.
type termWriter struct {
	mu    sync.Mutex
	w     io.Writer
	carry []byte
	known *redact.Known // credentials this process sent (nil: none)
}

func (t *termWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	data := append(t.carry, p...)
	t.carry = nil
	// Hold an incomplete UTF-8 sequence at the end for the next write.
	for k := 1; k <= 3 && k <= len(data); k++ {
		c := data[len(data)-k]
		if c < 0x80 {
			break
		}
		if c >= 0xc0 { // a leading byte: is its sequence complete?
			if !utf8.FullRune(data[len(data)-k:]) {
				t.carry = append([]byte(nil), data[len(data)-k:]...)
				data = data[:len(data)-k]
			}
			break
		}
	}
	if _, err := io.WriteString(t.w, providers.TerminalSafe(t.known.RedactStream(string(data)))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held incomplete sequence (as U+FFFD).
func (t *termWriter) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.carry) > 0 {
		_, _ = io.WriteString(t.w, providers.TerminalSafe(string(t.carry)))
		t.carry = nil
	}
}

// isTerminal reports whether w is a terminal (progress bars only then).
func isTerminal(w io.Writer) bool {
	if r, ok := w.(*termWriter); ok {
		w = r.w
	}
	f, ok := w.(*os.File)
	return ok && isTTY(f.Fd())
}

// logHandler makes the handler of log lines on stderr at level, in the --log-format: text
// without timestamps (read by a person at a terminal, or in a CI log that has its own), or json,
// one object a line with its time (for a log collector). Every logger on stderr is made here —
// the diagnostics, the failover's progress, the notification warnings — so that one flag sets
// them all.
func (a *app) logHandler(level slog.Leveler) slog.Handler {
	opts := &slog.HandlerOptions{Level: level}
	if a.logFormat == "json" {
		return slog.NewJSONHandler(a.stderr, opts)
	}
	opts.ReplaceAttr = func(_ []string, at slog.Attr) slog.Attr {
		if at.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return at
	}
	return slog.NewTextHandler(a.stderr, opts)
}
