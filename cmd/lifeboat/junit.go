package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"lifeboat/manifest/lint"
)

// JUnit XML as CI systems (Jenkins, GitLab, GitHub test reporters) read it. Shared by every
// command with -o junit: lint (one case per rule), verify (one suite per replica, one case per file).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
	SystemErr string      `xml:"system-err,omitempty"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// junitFailure is the body of a <failure> or an <error>.
type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

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

func writeJUnit(w io.Writer, s junitSuites) error {
	for _, su := range s.Suites {
		s.Tests += su.Tests
		s.Failures += su.Failures
		s.Errors += su.Errors
		s.Skipped += su.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
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
