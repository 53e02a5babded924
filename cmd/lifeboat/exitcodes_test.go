package main

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"lifeboat/drills"
	"lifeboat/failover"
	"lifeboat/fleet/router"
	"lifeboat/providers"
	"lifeboat/verify"
)

// TestExitTable holds the one mapping to DESIGN's contract: every class, wrapped the way the
// commands wrap it, exits with its code.
func TestExitTable(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("failover run: step 2: %w", err) }
	cases := []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{wrap(&failover.LockHeldError{}), exitRefused},
		{wrap(failover.ErrRefused), exitRefused},
		{wrap(failover.ErrLockLost), exitRefused},
		{wrap(failover.ErrIncomplete), exitRefused},
		{wrap(failover.ErrHeld), exitProblem},
		{wrap(failover.ErrDrift), exitProblem},
		{wrap(router.ErrRouterUnreachable), exitUnreachable},
		{wrap(drills.ErrInvalidDrill), exitUsage},
		{wrap(drills.ErrLeftovers), exitRefused},
		{wrap(drills.ErrDrillRunning), exitRefused},
		{wrap(verify.ErrFailed), exitProblem},
		{problem("lint found 2 errors"), exitProblem},
		{wrap(context.Canceled), exitInterrupted},
		{wrap(providers.ErrUnreachable), exitUnreachable},
		{wrap(errors.New("no such file")), exitUsage},
		{usageErr("bad flag"), exitUsage},
		{withCode(exitRefused, errors.New("explicit")), exitRefused},
		// a refusal wins over the interruption that ended the run it refused
		{wrap(errors.Join(failover.ErrRefused, context.Canceled)), exitRefused},
	}
	for _, c := range cases {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	for _, r := range exitTable {
		if r.name == "" || r.match == nil || r.code < 1 || r.code > exitInterrupted {
			t.Errorf("exit table row %+v: a name, a matcher and a code 1..130", r)
		}
	}
}

// mdTables are the tables of a Markdown document by section: the "## " heading above each, and
// its body rows split into trimmed cells (the header and the |---| line left out).
func mdTables(doc string) map[string][][]string {
	out := map[string][][]string{}
	section, inTable := "", false
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
		}
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		if !inTable { // the header row
			inTable = true
			continue
		}
		if strings.Trim(line, "|-: ") == "" {
			continue
		}
		var row []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			row = append(row, strings.TrimSpace(c))
		}
		out[section] = append(out[section], row)
	}
	return out
}

// exitConstants are the exit* constants of exitcodes.go, by name, read from its source.
func exitConstants(t *testing.T) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "exitcodes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !strings.HasPrefix(n.Name, "exit") || !ok || lit.Kind != token.INT {
					continue
				}
				v, err := strconv.Atoi(lit.Value)
				if err != nil {
					t.Fatalf("%s = %s: %v", n.Name, lit.Value, err)
				}
				out[n.Name] = v
			}
		}
	}
	if len(out) < 5 {
		t.Fatalf("found only %d exit constants in exitcodes.go: %v", len(out), out)
	}
	return out
}

// TestExitCodesDocMatchesTheTable ties docs/exit-codes.md to the code: its "From an error to its
// code" table is exitTable, row for row (name and code, in order, nothing more or less); every
// exit constant has a row in "Exit codes (every command)"; and no table of the doc gives a code
// that is not one of them.
func TestExitCodesDocMatchesTheTable(t *testing.T) {
	const doc = "docs/exit-codes.md"
	tables := mdTables(readDoc(t, doc))
	classes := tables["From an error to its code"]
	if len(classes) == 0 {
		t.Fatalf("%s has no table under \"## From an error to its code\" (sections: %v)", doc, slices.Sorted(maps.Keys(tables)))
	}
	var inDoc, inCode []string
	for _, row := range classes {
		inDoc = append(inDoc, strings.Join(row, " | "))
	}
	for _, r := range exitTable {
		inCode = append(inCode, fmt.Sprintf("%s | %d", r.name, r.code))
	}
	if !slices.Equal(inDoc, inCode) {
		t.Errorf("%s, \"From an error to its code\", must list exitTable's rows in order (class | code):\n doc:  %q\n code: %q", doc, inDoc, inCode)
	}

	consts := exitConstants(t)
	codes := map[int]bool{}
	for _, v := range consts {
		codes[v] = true
	}
	every := map[int]bool{}
	for _, row := range tables["Exit codes (every command)"] {
		c, err := strconv.Atoi(row[0])
		if err != nil {
			t.Errorf("%s, every command: a row whose code is %q", doc, row[0])
		}
		every[c] = true
	}
	for name, v := range consts {
		if !every[v] {
			t.Errorf("%s = %d has no row in %s, \"Exit codes (every command)\"", name, v, doc)
		}
	}
	for section, rows := range tables {
		if section == "From an error to its code" {
			continue
		}
		for _, row := range rows {
			if c, err := strconv.Atoi(row[0]); err == nil && !codes[c] {
				t.Errorf("%s, %q: code %d is none of exitcodes.go's constants", doc, section, c)
			}
		}
	}
}
