package modelrepo

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// YAML helpers shared by the engine config and deployment parsers. vLLM reads its config with
// PyYAML (YAML 1.1), so plain scalars are resolved the way PyYAML does: yes/no/on/off are
// booleans, "1e5" (no dot) is a string.

type scalarKind uint8

const (
	kNull scalarKind = iota
	kBool
	kInt
	kFloat
	kStr
)

var (
	pyInt   = regexp.MustCompile(`^[-+]?(0|[1-9][0-9_]*)$`)
	pyHex   = regexp.MustCompile(`^[-+]?0x[0-9a-fA-F_]+$`)
	pyOct   = regexp.MustCompile(`^[-+]?0[0-7_]+$`)
	pyBin   = regexp.MustCompile(`^[-+]?0b[0-1_]+$`)
	pyFloat = regexp.MustCompile(`^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
)

// resolveScalar classifies a scalar node like PyYAML's safe loader.
func resolveScalar(n *yaml.Node) (scalarKind, bool) {
	if n.Style&yaml.TaggedStyle != 0 {
		switch n.Tag {
		case "!!null":
			return kNull, false
		case "!!bool":
			return kBool, pyBool(n.Value)
		case "!!int":
			return kInt, false
		case "!!float":
			return kFloat, false
		}
		return kStr, false
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return kStr, false
	}
	v := n.Value
	switch v {
	case "", "~", "null", "Null", "NULL":
		return kNull, false
	case "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return kBool, true
	case "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return kBool, false
	}
	if pyInt.MatchString(v) || pyHex.MatchString(v) || pyOct.MatchString(v) || pyBin.MatchString(v) {
		return kInt, false
	}
	if pyFloat.MatchString(v) {
		return kFloat, false
	}
	return kStr, false
}

func pyBool(s string) bool {
	switch strings.ToLower(s) {
	case "yes", "true", "on", "y":
		return true
	}
	return false
}

// yamlInt is the value of a scalar PyYAML reads as an int.
func yamlInt(s string) (int64, error) {
	s = strings.ReplaceAll(s, "_", "")
	neg := false
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		neg = s[0] == '-'
		s = s[1:]
	}
	var v uint64
	var err error
	switch {
	case strings.HasPrefix(s, "0x"):
		v, err = strconv.ParseUint(s[2:], 16, 63)
	case strings.HasPrefix(s, "0b"):
		v, err = strconv.ParseUint(s[2:], 2, 63)
	case len(s) > 1 && s[0] == '0':
		v, err = strconv.ParseUint(s[1:], 8, 63)
	default:
		v, err = strconv.ParseUint(s, 10, 63)
	}
	if err != nil {
		return 0, err
	}
	if neg {
		return -int64(v), nil
	}
	return int64(v), nil
}

// pyIntString is Python's int(str): optional sign, decimal digits, single underscores between
// digits, surrounding whitespace.
func pyIntString(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 || body == "" || strings.HasPrefix(body, "_") || strings.HasSuffix(body, "_") || strings.Contains(body, "__") {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
	return v, err == nil
}

// pyStr approximates Python's str() of the value PyYAML loads for a scalar, which is what vLLM
// passes on the command line.
func pyStr(n *yaml.Node) string {
	k, b := resolveScalar(n)
	switch k {
	case kNull:
		return "None"
	case kBool:
		if b {
			return "True"
		}
		return "False"
	case kInt:
		if v, err := yamlInt(n.Value); err == nil {
			return strconv.FormatInt(v, 10)
		}
	}
	return n.Value
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		k, _ := resolveScalar(n)
		switch k {
		case kNull:
			return "null"
		case kBool:
			return "a boolean (" + n.Value + ")"
		case kInt:
			return "an integer (" + n.Value + ")"
		case kFloat:
			return "a number (" + n.Value + ")"
		}
		return fmt.Sprintf("%q", clip(n.Value, 60))
	}
	return "an unsupported YAML node"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// deref follows aliases (bounded, in case of alias cycles).
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 32; i++ {
		n = n.Alias
	}
	return n
}

var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError rewrites "yaml: line 7: msg" as "name:7: msg".
func yamlError(name string, err error) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s:%s: %s", name, m[1], m[2])
	}
	return fmt.Errorf("%s: %s", name, strings.TrimPrefix(msg, "yaml: "))
}

// nodeToAny converts a YAML subtree to JSON-like Go values (maps, slices, json.Number, bool,
// string, nil), bounded in size so alias bombs cannot blow it up.
func nodeToAny(n *yaml.Node, budget *int, depth int) (any, error) {
	n = deref(n)
	*budget--
	if n == nil || *budget < 0 || depth > 64 {
		return nil, fmt.Errorf("value too large or too deeply nested")
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k == nil || k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: mapping key is not a scalar", n.Content[i].Line)
			}
			v, err := nodeToAny(n.Content[i+1], budget, depth+1)
			if err != nil {
				return nil, err
			}
			m[pyStr(k)] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeToAny(c, budget, depth+1)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	case yaml.ScalarNode:
		k, b := resolveScalar(n)
		switch k {
		case kNull:
			return nil, nil
		case kBool:
			return b, nil
		case kInt:
			if v, err := yamlInt(n.Value); err == nil {
				return json.Number(strconv.FormatInt(v, 10)), nil
			}
			return n.Value, nil
		case kFloat:
			f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
			if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return n.Value, nil
			}
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
		}
		return n.Value, nil
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}
