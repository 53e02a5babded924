// Package junit writes JUnit XML as CI systems (Jenkins, GitLab, GitHub test reporters) read it:
// one set of types (Suites, Suite, Case) and Write, shared by the CLI's -o junit (lint, verify,
// check) and the drill reports' junit.xml.
package junit
