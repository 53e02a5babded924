package main

import (
	"fmt"
	"io"
	"strings"

	"lifeboat/drills/junit"
	"lifeboat/manifest/lint"
	"lifeboat/providers"
)

// The JUnit types are drills/junit's, shared with the drill reports: lint (one case per rule),
// verify (one suite per replica, one case per file), check, drill run.
type (
	junitSuites  = junit.Suites
	junitSuite   = junit.Suite
	junitCase    = junit.Case
	junitFailure = junit.Failure
	junitSkipped = junit.Skip
)

// writeJUnit writes the command's JUnit document.
func (a *app) writeJUnit(s junitSuites) error {
	a.wroteJUnit = true
	return writeJUnit(a.stdout, s)
}

// errorSuites is the JUnit document of a command that failed before it had results: one test
// case in error, saying why, so that CI shows the reason instead of an empty file.
func errorSuites(command string, code int, msg string) junitSuites {
	if command == "" {
		command = "lifeboat"
	}
	tc := junitCase{Name: command, ClassName: "lifeboat", Error: &junitFailure{Message: firstLine(msg), Type: fmt.Sprintf("exit %d", code), Text: msg}}
	return junitSuites{Name: command, Suites: []junitSuite{{Name: command, Tests: 1, Errors: 1, Cases: []junitCase{tc}}}}
}

// writeJUnit redacts the document's values, then encoding/xml is the last step.
func writeJUnit(w io.Writer, s junitSuites) error {
	providers.RedactStrings(&s)
	return junit.Write(w, s)
}

// lintSuites renders a lint report as one test case per rule: errors fail it, warnings are
// reported in its output so they are visible without failing the build — unless strict, where a
// warning fails its case as it fails the exit status.
func lintSuites(name string, rep *lint.Report, strict bool) junitSuites {
	byRule := map[string][]lint.Finding{}
	for _, f := range rep.Findings {
		byRule[f.Rule] = append(byRule[f.Rule], f)
	}
	su := junitSuite{Name: "lifeboat lint " + name}
	for _, r := range lint.Rules() {
		tc := junitCase{Name: r.ID, ClassName: "lifeboat.lint"}
		var errs, warns []string
		for _, f := range byRule[r.ID] {
			line := fmt.Sprintf("%s: %s: %s (hint: %s)", f.Severity, orDash(f.Path), f.Message, f.Hint)
			if f.Severity == lint.Error || strict {
				errs = append(errs, line)
			} else {
				warns = append(warns, line)
			}
		}
		if len(errs) > 0 {
			tc.Failure = &junitFailure{Message: fmt.Sprintf("%d error(s): %s", len(errs), firstLine(errs[0])), Type: "error", Text: strings.Join(append(errs, warns...), "\n")}
			su.Failures++
		} else if len(warns) > 0 {
			tc.SystemOut = strings.Join(warns, "\n")
		}
		su.Cases = append(su.Cases, tc)
		su.Tests++
	}
	return junitSuites{Name: "lifeboat", Suites: []junitSuite{su}}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
