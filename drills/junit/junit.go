package junit

import (
	"encoding/xml"
	"io"
)

// Suites is a <testsuites> document.
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Time     string   `xml:"time,attr,omitempty"`
	Suites   []Suite  `xml:"testsuite"`
}

// Suite is one <testsuite>.
type Suite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr,omitempty"`
	// Properties come first, as the JUnit schema orders them.
	Properties []Property `xml:"properties>property,omitempty"`
	Cases      []Case     `xml:"testcase"`
	SystemErr  string     `xml:"system-err,omitempty"`
}

// Property is one <property name=… value=…/> of a suite.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Case is one <testcase>.
type Case struct {
	Name      string   `xml:"name,attr"`
	ClassName string   `xml:"classname,attr"`
	Time      string   `xml:"time,attr,omitempty"`
	Failure   *Failure `xml:"failure,omitempty"`
	Error     *Failure `xml:"error,omitempty"`
	Skipped   *Skip    `xml:"skipped,omitempty"`
	SystemOut string   `xml:"system-out,omitempty"`
}

// Failure is the body of a <failure> or an <error>.
type Failure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// Skip is a <skipped>.
type Skip struct {
	Message string `xml:"message,attr"`
}

// Write writes s with its totals summed from the suites.
func Write(w io.Writer, s Suites) error {
	s.Tests, s.Failures, s.Errors, s.Skipped = 0, 0, 0, 0
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
