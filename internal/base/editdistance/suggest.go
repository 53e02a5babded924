package editdistance

import (
	"slices"
	"strings"
)

// The one "did you mean" ranking of Lifeboat: subcommands, flags, store prefixes, fleet and drill
// names, router and launcher kinds, engine flags — every suggestion is ranked, cut and worded
// here, so that a typo is caught (or not) the same way wherever it is made.
//
//   - Names are compared case-insensitively; a name equal to what was typed is never suggested.
//   - The distance is Levenshtein's; a name that starts with what was typed (or the reverse),
//     both at least 3 bytes long, is at distance 1 at most (an abbreviation or a truncated name).
//   - A name is close enough when its distance is at most max(2, len(typed)/3) and below
//     len(typed): two slips in a short name, one in three in a long one, never the whole of it;
//     anything further is another word, not a typo.
//   - Ties go to the name whose length is closer to what was typed, then to the first in byte
//     order, so that the ranking is stable.

// maxCompared bounds the length of a typed name worth ranking (Levenshtein is quadratic).
const maxCompared = 256

// Distance is the ranking distance between typed and name (see above).
func Distance(typed, name string) int {
	a, b := strings.ToLower(typed), strings.ToLower(name)
	d := Levenshtein(a, b)
	if min(len(a), len(b)) >= 3 && (strings.HasPrefix(a, b) || strings.HasPrefix(b, a)) {
		d = min(d, 1)
	}
	return d
}

// Close reports whether a name at distance d from typed is close enough to suggest.
func Close(typed string, d int) bool { return d <= max(2, len(typed)/3) && d < len(typed) }

// Suggest returns up to n of names that typed could be a typo of, closest first; nil when none
// is close.
func Suggest(typed string, names []string, n int) []string {
	if typed == "" || len(typed) > maxCompared || n <= 0 {
		return nil
	}
	type cand struct {
		name    string
		d, dlen int
	}
	var cs []cand
	seen := map[string]bool{}
	for _, name := range names {
		if name == typed || seen[name] || len(name) > maxCompared {
			continue
		}
		seen[name] = true
		if d := Distance(typed, name); Close(typed, d) {
			cs = append(cs, cand{name, d, abs(len(name) - len(typed))})
		}
	}
	slices.SortFunc(cs, func(x, y cand) int {
		if x.d != y.d {
			return x.d - y.d
		}
		if x.dlen != y.dlen {
			return x.dlen - y.dlen
		}
		return strings.Compare(x.name, y.name)
	})
	var out []string
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.name)
	}
	return out
}

// Best is the closest of names to typed, or "" when none is close.
func Best(typed string, names []string) string {
	if s := Suggest(typed, names, 1); len(s) > 0 {
		return s[0]
	}
	return ""
}

// DidYouMean words suggestions as every message ends with them: "did you mean X?", "did you
// mean X or Y?", "did you mean X, Y or Z?"; "" for none. The caller has written each as the user
// would type it (quoted, with "--", as a URL).
func DidYouMean(suggestions ...string) string {
	switch len(suggestions) {
	case 0:
		return ""
	case 1:
		return "did you mean " + suggestions[0] + "?"
	}
	return "did you mean " + strings.Join(suggestions[:len(suggestions)-1], ", ") + " or " + suggestions[len(suggestions)-1] + "?"
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
