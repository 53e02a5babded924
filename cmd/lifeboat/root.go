package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes, the same for every command (see README).
const (
	exitOK          = 0
	exitProblem     = 1 // a check found a problem
	exitUsage       = 2 // bad input or usage
	exitRefused     = 3 // refused for safety
	exitUnreachable = 4 // a dependency stayed unreachable
)

// exitError carries an exit code up to run. A nil err with a code means "already reported".
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// usageErr marks bad input (exit 2).
func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// withCode wraps err with an exit code unless it already has one.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: code, err: err}
}

// app is the state shared by every command: streams, output format, logger. No globals.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	output         string
	verbose        bool
	log            *slog.Logger
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code := exitUsage // cobra's own errors (unknown flag, missing argument) are usage errors
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "lifeboat: interrupted")
	}
	fmt.Fprintf(stderr, "lifeboat: %v\n", err)
	if a.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"error": err.Error(), "exit_code": code})
	}
	return code
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "lifeboat",
		Short: "Keep multi-region vLLM serving recoverable",
		Long: `Lifeboat captures everything a vLLM replica needs — model repository, engine config,
deployment files — in one DR manifest (an OCI image manifest with ModelPack media types),
and lints it so that a missing tokenizer, quantization config, RoPE setting, chat template
or LoRA adapter is found in CI, not during an outage.

Exit codes (every command):
  0  ok
  1  a check found a problem (lint error, mismatch, not warm, SLA missed)
  2  bad input or usage (the message names the file, line or field)
  3  refused for safety
  4  a dependency stayed unreachable after retries

Results go to stdout (-o text|json, and junit where CI consumes it); progress and logs go to stderr.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelWarn
			if a.verbose {
				level = slog.LevelDebug
			}
			// No timestamps: these lines are read by a person at a terminal or in a CI log
			// that already has its own.
			a.log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level, ReplaceAttr: func(_ []string, at slog.Attr) slog.Attr {
				if at.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return at
			}}))
			return nil
		},
	}
	root.PersistentFlags().StringVarP(&a.output, "output", "o", "text", "output format: text or json (junit where a command says so)")
	root.PersistentFlags().BoolVarP(&a.verbose, "verbose", "v", false, "log debug details to stderr")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json", "junit"}, cobra.ShellCompDirectiveNoFileComp))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v (see --help)", err) })
	root.AddCommand(a.manifestCmd(), a.verifyCmd(), a.replicateCmd(), a.restoreCmd(), a.probeCmd(), a.bootCmd(), a.engineSimCmd(), a.demoCmd(), a.versionCmd())
	return root
}

// checkOutput validates -o against the formats a command supports.
func (a *app) checkOutput(formats ...string) error {
	for _, f := range formats {
		if a.output == f {
			return nil
		}
	}
	bad := a.output
	a.output = "text" // so the error itself is not rendered in an unknown format
	return usageErr("-o %s is not supported here (use one of %v)", bad, formats)
}

// writeJSON renders v as indented JSON on stdout.
func (a *app) writeJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// isTerminal reports whether w is a terminal (progress bars only then).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTTY(f.Fd())
}

var version = "dev" // set with -ldflags "-X main.version=…"

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the Lifeboat version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.checkOutput("text", "json"); err != nil {
				return err
			}
			if a.output == "json" {
				return a.writeJSON(map[string]string{"version": version})
			}
			fmt.Fprintln(a.stdout, "lifeboat", version)
			return nil
		},
	}
}
