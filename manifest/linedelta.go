package manifest

import "fmt"

// lineDelta counts the lines added and removed between two texts along a shortest edit script
// (Myers' O(ND) algorithm, the one diff and git use by default). Past a work bound — texts
// that share little — it counts lines by content instead (a line moved is then not a change),
// which keeps a hostile manifest from costing quadratic time.
func lineDelta(a, b []string) (added, removed int) {
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return m, n
	}
	const work = 20_000_000 // (N+M)·D steps at most
	maxD := min(n+m, max(1, work/(n+m)))
	if d, ok := editDistance(a, b, maxD); ok {
		// d = (n-L) + (m-L) for a longest common subsequence of length L.
		return (d + m - n) / 2, (d + n - m) / 2
	}
	count := map[string]int{}
	for _, l := range a {
		count[l]++
	}
	for _, l := range b {
		if count[l] > 0 {
			count[l]--
		} else {
			added++
		}
	}
	for _, c := range count {
		removed += c
	}
	return added, removed
}

// editDistance is the number of insertions and deletions turning a into b, if at most maxD.
func editDistance(a, b []string, maxD int) (int, bool) {
	n, m := len(a), len(b)
	off := maxD + 1
	v := make([]int, 2*maxD+3) // v[off+k]: the furthest x reached on diagonal k = x-y
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return d, true
			}
		}
	}
	return 0, false
}

// MaxDiffLines bounds the changed lines a diff shows of one text file; past it, one last line
// says how many more were added and removed.
const MaxDiffLines = 40

// textDiff lists the lines removed ("- …") and added ("+ …") between two texts, in order, along a
// longest common subsequence (computed when the differing middles' product is at most a million
// lines; beyond, only the counts). Lines are shown printable (see printable).
func textDiff(x, y string) []string {
	a, b := lines(x), lines(y)
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	var out []string
	added, removed := 0, 0
	emit := func(sign string, l string) {
		if sign == "+" {
			added++
		} else {
			removed++
		}
		if len(out) < MaxDiffLines {
			out = append(out, sign+" "+printable(l))
		}
	}
	if len(a)*len(b) > 1_000_000 { // the table would pass 4 MB

		added, removed = lineDelta(a, b)
		return []string{fmt.Sprintf("(+%d/-%d lines)", added, removed)}
	}
	// lcs[i][j]: the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			emit("-", a[i])
			i++
		default:
			emit("+", b[j])
			j++
		}
	}
	if shown := len(out); added+removed > shown {
		out = append(out, fmt.Sprintf("(… %d more changed lines)", added+removed-shown))
	}
	return out
}
