package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// table is the one text-table renderer for output whose rows are interleaved with lines that are
// not part of the columns (a replica's findings under its line, a file's content diff under its
// row). text/tabwriter sizes each block of consecutive rows on its own, so the rows after such a
// line — or a replica's rows against the next replica's — took other widths, and a long region
// name shifted every column after it. A table sizes each column to its longest cell over all the
// rows of the same group, wherever they are. A row's last cell is never padded (nor counted).
type table struct {
	lines []tableLine
}

type tableLine struct {
	group int      // rows of one group share their column widths
	cells []string // nil: text is printed as it is
	text  string
}

// row adds a row of group 0.
func (t *table) row(cells ...string) { t.add(0, cells...) }

// add adds a row of the group.
func (t *table) add(group int, cells ...string) {
	t.lines = append(t.lines, tableLine{group: group, cells: cells})
}

// text adds a line outside the columns.
func (t *table) text(format string, args ...any) {
	t.lines = append(t.lines, tableLine{text: fmt.Sprintf(format, args...)})
}

// write renders the table: columns two spaces apart, no trailing space.
func (t *table) write(w io.Writer) error {
	widths := map[int][]int{}
	for _, l := range t.lines {
		for i, c := range l.cells[:max(len(l.cells)-1, 0)] {
			ws := widths[l.group]
			for len(ws) <= i {
				ws = append(ws, 0)
			}
			ws[i] = max(ws[i], utf8.RuneCountInString(c))
			widths[l.group] = ws
		}
	}
	var b strings.Builder
	for _, l := range t.lines {
		if l.cells == nil {
			b.WriteString(l.text)
			b.WriteByte('\n')
			continue
		}
		var s strings.Builder
		for i, c := range l.cells {
			s.WriteString(c)
			if i < len(l.cells)-1 {
				s.WriteString(strings.Repeat(" ", widths[l.group][i]-utf8.RuneCountInString(c)+2))
			}
		}
		b.WriteString(strings.TrimRight(s.String(), " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
