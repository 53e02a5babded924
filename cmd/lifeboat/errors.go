package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
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

// unreachable marks a dependency that stayed unreachable (exit 4) — a replica that never
// listened, a store. Its message is the caller's alone: providers.ErrUnreachable's own text
// ("store unreachable") would misname a replica.
func unreachable(format string, args ...any) error {
	return &unreachableError{msg: fmt.Sprintf(format, args...)}
}

type unreachableError struct{ msg string }

func (e *unreachableError) Error() string        { return e.msg }
func (e *unreachableError) Is(target error) bool { return target == providers.ErrUnreachable }

// unknownSubcommand makes a command group refuse what it does not know (exit 2, with a
// suggestion) instead of printing its help and exiting 0. Without arguments it prints its help.
// The group ignores flags it does not know, so that "failover rnu --fleet f" is reported as the
// unknown command it is, not as an unknown --fleet (the subcommand's flag).
func unknownSubcommand(c *cobra.Command) {
	c.Args = cobra.ArbitraryArgs
	c.DisableSuggestions = true
	c.FParseErrWhitelist.UnknownFlags = true
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			if fl := unknownFlagIn(cmd, strings.Split(cmd.Root().Annotations[argsAnnotation], "\x00")); fl != "" {
				return usageErr("unknown flag %s for %q: name a subcommand first (%s SUBCOMMAND %s ...)\n\nRun '%s --help' for the commands.", fl, cmd.CommandPath(), cmd.CommandPath(), fl, cmd.CommandPath())
			}
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := suggestCommand(cmd, args[0]); s != "" {
			msg += ": " + editdistance.DidYouMean(strconv.Quote(s))
		}
		return usageErr("%s\n\nRun '%s --help' for the commands.", msg, cmd.CommandPath())
	}
}

// unknownRootCommand words cobra's error for an unknown top-level command as a group's is
// worded, with the one did-you-mean ranking.
func unknownRootCommand(root *cobra.Command, err error) error {
	var ee *exitError
	if err == nil || errors.As(err, &ee) {
		return err // a group's own error (unknownSubcommand) is worded already
	}
	var name string
	if _, serr := fmt.Sscanf(err.Error(), "unknown command %q for", &name); serr != nil {
		return err
	}
	msg := fmt.Sprintf("unknown command %q for %q", name, root.CommandPath())
	if s := suggestCommand(root, name); s != "" {
		msg += ": " + editdistance.DidYouMean(strconv.Quote(s))
	}
	return usageErr("%s\n\nRun '%s --help' for the commands.", msg, root.CommandPath())
}

// argsAnnotation is the root command's annotation holding the command line (NUL-separated),
// for a group's own errors: cobra keeps it to itself.
const argsAnnotation = "lifeboat.args"

// unknownFlagIn returns the first flag in args that cmd does not know, or "".
func unknownFlagIn(cmd *cobra.Command, args []string) string {
	for _, arg := range args {
		if arg == "--" {
			return ""
		}
		switch {
		case strings.HasPrefix(arg, "--"):
			name, _, _ := strings.Cut(arg[2:], "=")
			if cmd.Flags().Lookup(name) == nil {
				return "--" + name
			}
		case strings.HasPrefix(arg, "-") && len(arg) > 1:
			if cmd.Flags().ShorthandLookup(arg[1:2]) == nil {
				return arg[:2]
			}
		}
	}
	return ""
}

// suggestCommand is the subcommand of cmd (or an alias of one) closest to name.
func suggestCommand(cmd *cobra.Command, name string) string {
	var names []string
	for _, sub := range cmd.Commands() {
		if !sub.IsAvailableCommand() {
			continue
		}
		names = append(names, sub.Name())
		names = append(names, sub.Aliases...)
	}
	return editdistance.Best(name, names)
}

// flagError turns pflag's parse errors into usage errors, with a suggestion for a mistyped long
// flag ("unknown flag: --manfiest" → "did you mean --manifest?").
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if s := suggestFlag(c, name); s != "" {
			return usageErr("%v: %s (see --help)", err, editdistance.DidYouMean("--"+s))
		}
	}
	return usageErr("%v (see --help)", err)
}

func suggestFlag(c *cobra.Command, name string) string {
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return editdistance.Best(name, names)
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
