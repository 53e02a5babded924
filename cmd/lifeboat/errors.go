package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"lifeboat/internal/base/editdistance"
	"lifeboat/providers"
)

// exitError gives an error an explicit exit code (bad usage, refused for safety).
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

// errProblem marks "a check found a problem" (exit 1): lint errors, a replica not warm, files
// that could not be repaired, manifests that differ under --exit-code.
var errProblem = errors.New("check failed")

// problem is an errProblem with a message that says what was found.
func problem(format string, args ...any) error {
	return &problemError{msg: fmt.Sprintf(format, args...)}
}

type problemError struct{ msg string }

func (e *problemError) Error() string        { return e.msg }
func (e *problemError) Is(target error) bool { return target == errProblem }

// unreachable marks a dependency that stayed unreachable (exit 4) — a replica that never listened.
func unreachable(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), providers.ErrUnreachable)
}

// unknownSubcommand makes a command group refuse what it does not know (exit 2, with a
// suggestion) instead of printing its help and exiting 0. Without arguments it prints its help.
func unknownSubcommand(c *cobra.Command) {
	c.Args = cobra.ArbitraryArgs
	c.SuggestionsMinimumDistance = 2
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
		}
		return usageErr("%s\n\nRun '%s --help' for the commands.", msg, cmd.CommandPath())
	}
}

// flagError turns pflag's parse errors into usage errors, with a suggestion for a mistyped long
// flag ("unknown flag: --manfiest" → "did you mean --manifest?").
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if s := suggestFlag(c, name); s != "" {
			return usageErr("%v: did you mean --%s? (see --help)", err, s)
		}
	}
	return usageErr("%v (see --help)", err)
}

func suggestFlag(c *cobra.Command, name string) string {
	best, bestD := "", 3
	visit := func(n string) {
		d := editdistance.Levenshtein(strings.ToLower(name), n)
		if strings.HasPrefix(n, name) && len(name) >= 3 {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = n, d
		}
	}
	c.Flags().VisitAll(func(f *pflag.Flag) { visit(f.Name) })
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) { visit(f.Name) })
	return best
}

// withCode gives err an explicit exit code unless it already has one.
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

// signalError is the cause of the context a signal ended.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string { return "interrupted by " + e.sig.String() }

// Is makes a signal's cause a cancellation for KindOf and errors.Is.
func (e *signalError) Is(target error) bool { return target == context.Canceled }

// interruptedCode is 128+signo when a signal ended ctx: the run is incomplete, whatever it found
// before (a corrupt file, an unreachable replica) — the shell convention scripts test for.
func interruptedCode(ctx context.Context) (int, bool) {
	var se *signalError
	if !errors.As(context.Cause(ctx), &se) {
		return 0, false
	}
	if s, ok := se.sig.(syscall.Signal); ok {
		return 128 + int(s), true
	}
	return exitInterrupted, true
}
