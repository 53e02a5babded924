package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"lifeboat/internal/base/editdistance"
)

// MaxProblems bounds the problems a Checker keeps for one file.
const MaxProblems = 50

// Checker collects the problems found in one file.
type Checker struct {
	Name     string // the file name used in messages
	Problems []string
}

// Errf records a problem at line (0: unknown) and field ("" for none).
func (c *Checker) Errf(line int, field, format string, args ...any) {
	if len(c.Problems) >= MaxProblems {
		return
	}
	msg := fmt.Sprintf(format, args...)
	switch {
	case line > 0 && field != "":
		c.Problems = append(c.Problems, fmt.Sprintf("%s:%d: %s: %s", c.Name, line, field, msg))
	case line > 0:
		c.Problems = append(c.Problems, fmt.Sprintf("%s:%d: %s", c.Name, line, msg))
	case field != "":
		c.Problems = append(c.Problems, fmt.Sprintf("%s: %s: %s", c.Name, field, msg))
	default:
		c.Problems = append(c.Problems, fmt.Sprintf("%s: %s", c.Name, msg))
	}
}

// Failed reports whether any problem was recorded.
func (c *Checker) Failed() bool { return len(c.Problems) > 0 }

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Root decodes data as exactly one YAML document without anchors or aliases (a file read by
// people during an outage must mean what it says on each line) and returns its root node, or nil
// after recording why not. what names the kind of file in messages ("a fleet file").
func (c *Checker) Root(data []byte, what string) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			c.Errf(0, "", "empty file")
			return nil
		}
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			c.Errf(line, "", "%s", m[2])
		} else {
			c.Errf(0, "", "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		c.Errf(extra.Line, "", "%s holds one YAML document", what)
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		c.Errf(0, "", "empty file")
		return nil
	}
	root := doc.Content[0]
	if !c.noAliases(root, what) {
		return nil
	}
	return root
}

func (c *Checker) noAliases(n *yaml.Node, what string) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		c.Errf(n.Line, "", "YAML anchors and aliases are not supported in %s", what)
		return false
	}
	for _, k := range n.Content {
		if !c.noAliases(k, what) {
			return false
		}
	}
	return true
}

// Join appends key to the dotted field path at.
func Join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

// KindName describes a node for "want X, got Y" messages.
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if IsNull(n) {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// IsNull reports whether n is an explicit or implicit null.
func IsNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// Fields maps the keys a mapping may hold to their decoders; each gets the value node and the
// field path.
type Fields map[string]func(n *yaml.Node, at string)

// Mapping walks a mapping with a fixed set of keys: an unknown or repeated key is an error. A
// null value is an empty mapping unless top (the document root).
func (c *Checker) Mapping(n *yaml.Node, at string, top bool, fields Fields) {
	if IsNull(n) && !top {
		return
	}
	if n.Kind != yaml.MappingNode {
		what := at
		if top {
			what = ""
		}
		c.Errf(n.Line, what, "want a mapping, got %s", KindName(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		fn, ok := fields[k.Value]
		switch {
		case k.Kind != yaml.ScalarNode:
			c.Errf(k.Line, at, "keys must be plain names")
		case !ok:
			names := sortedFieldNames(fields)
			c.Errf(k.Line, Join(at, k.Value), "unknown key (want one of %s)%s", strings.Join(names, ", "), DidYouMean(k.Value, names))
		case seen[k.Value]:
			c.Errf(k.Line, Join(at, k.Value), "defined twice")
		default:
			seen[k.Value] = true
			fn(v, Join(at, k.Value))
		}
	}
}

// DidYouMean is " (did you mean X?)" for the name among names closest to got (the one
// did-you-mean ranking, editdistance.Suggest), or "": the ending of every "unknown name"
// problem in a fleet or drill file.
func DidYouMean(got string, names []string) string {
	if s := editdistance.DidYouMean(editdistance.Suggest(got, names, 1)...); s != "" {
		return " (" + s + ")"
	}
	return ""
}

func sortedFieldNames(f Fields) []string {
	out := make([]string, 0, len(f))
	for k := range f {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// EachKey walks a mapping whose keys are names (regions, tenant classes, variables); a repeated
// key is an error. A null value is an empty mapping.
func (c *Checker) EachKey(n *yaml.Node, at string, fn func(k, v *yaml.Node, at string)) {
	if IsNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		c.Errf(n.Line, at, "want a mapping, got %s", KindName(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			c.Errf(k.Line, at, "keys must be plain names")
			continue
		}
		if seen[k.Value] {
			c.Errf(k.Line, Join(at, k.Value), "defined twice")
			continue
		}
		seen[k.Value] = true
		fn(k, v, Join(at, k.Value))
	}
}

// nameRE is compiled on first use, not at every start of every command: its bounded repetition
// makes it one of the costlier expressions to compile.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`) })

// CheckName checks that a key is a plain name (letters, digits, '.', '_', '-'; at most 63).
func (c *Checker) CheckName(k *yaml.Node, at string) bool {
	if !nameRE().MatchString(k.Value) {
		c.Errf(k.Line, at, "not a valid name (letters, digits, '.', '_', '-'; at most 63)")
		return false
	}
	return true
}

// ValidName reports whether s is a plain name as Name accepts it.
func ValidName(s string) bool { return nameRE().MatchString(s) }

// Str decodes a string; required also rejects null and blank values.
func (c *Checker) Str(n *yaml.Node, at string, required bool) string {
	if n.Kind != yaml.ScalarNode || IsNull(n) {
		if required || n.Kind != yaml.ScalarNode {
			c.Errf(n.Line, at, "want a string, got %s", KindName(n))
		}
		return ""
	}
	if required && strings.TrimSpace(n.Value) == "" {
		c.Errf(n.Line, at, "must not be empty")
	}
	return n.Value
}

// StrList decodes a list of non-empty strings; what names the items in messages.
func (c *Checker) StrList(n *yaml.Node, at, what string) []string {
	if n.Kind != yaml.SequenceNode {
		c.Errf(n.Line, at, "want a list of %s, got %s", what, KindName(n))
		return nil
	}
	out := []string{}
	for i, k := range n.Content {
		if s := c.Str(k, fmt.Sprintf("%s[%d]", at, i), true); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// IntIn decodes a whole number in [lo, hi].
func (c *Checker) IntIn(n *yaml.Node, at string, lo, hi int) int {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		c.Errf(n.Line, at, "want a whole number, got %s", KindName(n))
		return 0
	}
	v, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil || v < int64(lo) || v > int64(hi) {
		c.Errf(n.Line, at, "want a whole number from %d to %d, got %s", lo, hi, n.Value)
		return 0
	}
	return int(v)
}

// Positive decodes a finite number above 0.
func (c *Checker) Positive(n *yaml.Node, at string) float64 {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		c.Errf(n.Line, at, "want a number, got %s", KindName(n))
		return 0
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		c.Errf(n.Line, at, "want a number above 0, got %s", n.Value)
		return 0
	}
	return v
}

// Duration decodes a positive Go duration ("60s", "30m").
func (c *Checker) Duration(n *yaml.Node, at string) time.Duration {
	if n.Kind != yaml.ScalarNode || IsNull(n) {
		c.Errf(n.Line, at, "want a duration such as 60s or 30m, got %s", KindName(n))
		return 0
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil || d <= 0 {
		c.Errf(n.Line, at, "want a positive duration such as 60s or 30m, got %q", n.Value)
		return 0
	}
	return d
}
