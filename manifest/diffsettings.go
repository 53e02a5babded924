package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// contentDiff fills in what changed inside a changed file whose bytes both manifests embed, or
// the note saying why that cannot be shown.
func contentDiff(c Change, a, b File) Change {
	if a.Data == nil || b.Data == nil {
		c.Note = embedNote(a, b)
		return c
	}
	if b.Role == RoleChatTemplate && !strings.HasSuffix(b.Path, ".json") {
		if t, ok := templateDiff("", string(a.Data), string(b.Data)); ok {
			c.ChatTemplates = []TemplateChange{t}
		}
		return c
	}
	var structured bool
	c.Settings, c.ChatTemplates, structured = settingsDiff(a.Data, b.Data)
	if !structured {
		// Not YAML or JSON of keys (a Dockerfile, a lock file): the lines that changed.
		c.Lines = textDiff(string(a.Data), string(b.Data))
	}
	return c
}

// embedNote explains a changed file one of whose manifests does not embed it although it is of a
// kind Lifeboat embeds; "" for files never embedded (weights, tokenizers).
func embedNote(a, b File) string {
	limit := int64(DefaultEmbedLimit)
	what := "file"
	if b.Part == PartModel {
		if !ModelEmbeddable(b.Path, b.Role) {
			return ""
		}
		limit, what = ModelConfigEmbedLimit, "model config"
	}
	var missing, large []string
	for _, s := range []struct {
		name string
		f    File
	}{{"OLD", a}, {"NEW", b}} {
		switch {
		case s.f.Data != nil:
		case s.f.Size > limit:
			large = append(large, s.name)
		default:
			missing = append(missing, s.name)
		}
	}
	if len(large) > 0 {
		return fmt.Sprintf("larger than the %d-byte embed limit in %s: settings not compared", limit, strings.Join(large, " and "))
	}
	return fmt.Sprintf("%s not embedded in %s; rebuild it to see settings", what, strings.Join(missing, " and "))
}

// settingsDiff compares two embedded YAML or JSON files key by key, chat templates apart.
// structured is false when either is not a YAML stream of maps and lists.
func settingsDiff(a, b []byte) (settings []Setting, tpls []TemplateChange, structured bool) {
	da, oka := parseDocs(a)
	db, okb := parseDocs(b)
	if !oka || !okb {
		return nil, nil, false
	}
	for _, n := range append(append([]*yaml.Node{}, da...), db...) {
		if n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode {
			return nil, nil, false
		}
	}
	if len(da) > 0 && len(db) > 0 {
		tpls = templatesDiff(takeTemplates(da[0]), takeTemplates(db[0]))
	}
	var out []Setting
	for i := 0; i < max(len(da), len(db)); i++ {
		prefix := ""
		if i > 0 {
			prefix = fmt.Sprintf("[%d]", i)
		}
		var x, y *yaml.Node
		if i < len(da) {
			x = da[i]
		}
		if i < len(db) {
			y = db[i]
		}
		diffNodes(prefix, x, y, &out)
	}
	return out, tpls, true
}

// parseDocs decodes every document of a YAML (or JSON) file to its root node.
func parseDocs(data []byte) ([]*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, true
		}
		if err != nil {
			return nil, false
		}
		if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
			out = append(out, doc.Content[0])
		}
	}
}

// diffNodes appends the settings that differ between two nodes at path; nil is absent.
func diffNodes(path string, a, b *yaml.Node, out *[]Setting) {
	join := func(k string) string {
		if k = printable(k); path == "" {
			return k
		}
		return path + "." + k
	}
	switch {
	case a == nil && b == nil:
	case a == nil:
		*out = append(*out, Setting{Key: path, Kind: "added", New: render(b)})
	case b == nil:
		*out = append(*out, Setting{Key: path, Kind: "removed", Old: render(a)})
	case a.Kind == yaml.MappingNode && b.Kind == yaml.MappingNode:
		keys, av, bv := mappingKeys(a, b)
		for _, k := range keys {
			diffNodes(join(k), av[k], bv[k], out)
		}
	case a.Kind == yaml.SequenceNode && b.Kind == yaml.SequenceNode && !(scalars(a) && scalars(b)):
		// Lists of objects (containers, volumes) item by item; lists of scalars (EOS ids,
		// args) are one value.
		for i := 0; i < max(len(a.Content), len(b.Content)); i++ {
			var x, y *yaml.Node
			if i < len(a.Content) {
				x = a.Content[i]
			}
			if i < len(b.Content) {
				y = b.Content[i]
			}
			diffNodes(fmt.Sprintf("%s[%d]", path, i), x, y, out)
		}
	default:
		if ra, rb := render(a), render(b); ra != rb && !sameNumber(a, b) {
			*out = append(*out, Setting{Key: path, Kind: "changed", Old: ra, New: rb})
		}
	}
}

// mappingKeys lists the keys of two mappings, a's in document order then b's new ones, with each
// side's values (a repeated key: the last one, as decoders keep).
func mappingKeys(a, b *yaml.Node) ([]string, map[string]*yaml.Node, map[string]*yaml.Node) {
	var keys []string
	vals := func(n *yaml.Node) map[string]*yaml.Node {
		m := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			m[k] = n.Content[i+1]
		}
		return m
	}
	av, bv := vals(a), vals(b)
	seen := map[string]bool{}
	for _, n := range []*yaml.Node{a, b} {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i].Value; !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys, av, bv
}

func scalars(n *yaml.Node) bool {
	for _, c := range n.Content {
		if c.Kind != yaml.ScalarNode && c.Kind != yaml.AliasNode {
			return false
		}
	}
	return true
}

// sameNumber: 8 and 8.0 are one value to every reader of these files.
func sameNumber(a, b *yaml.Node) bool {
	if a.Kind != yaml.ScalarNode || b.Kind != yaml.ScalarNode || !isNumber(a) || !isNumber(b) {
		return false
	}
	x, errx := strconv.ParseFloat(a.Value, 64)
	y, erry := strconv.ParseFloat(b.Value, 64)
	return errx == nil && erry == nil && x == y
}

func isNumber(n *yaml.Node) bool { return n.Tag == "!!int" || n.Tag == "!!float" }

// maxRender bounds a rendered value; longer ones end in "…" with their length.
const maxRender = 160

// render writes a node compactly: scalars as they read, maps and lists in flow style. Aliases
// are shown by name, not expanded (an alias bomb stays small).
func render(n *yaml.Node) string {
	var b strings.Builder
	renderTo(&b, n)
	s := b.String()
	if utf8.RuneCountInString(s) > maxRender {
		r := []rune(s)
		s = fmt.Sprintf("%s… (%d chars)", string(r[:maxRender]), len(r))
	}
	return s
}

func renderTo(b *strings.Builder, n *yaml.Node) {
	if b.Len() > 4*maxRender {
		return // render cuts it anyway
	}
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(printable(n.Content[i].Value))
			b.WriteString(": ")
			renderTo(b, n.Content[i+1])
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteString(", ")
			}
			renderTo(b, c)
		}
		b.WriteByte(']')
	case yaml.AliasNode:
		b.WriteString("*" + printable(n.Value))
	default:
		b.WriteString(scalarText(n))
	}
}

// printable returns s, or s quoted when it holds a character that is not printable (control
// and format characters: an embedded file must not forge lines or escape sequences in output).
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// scalarText is a scalar's value; a string that would read as another type ("4096", "true", "")
// or holds unprintable characters is quoted, so that a number turned into a string shows as a
// change.
func scalarText(n *yaml.Node) string {
	if n.Tag == "!!null" {
		return "null"
	}
	if n.Tag != "!!str" {
		return printable(n.Value)
	}
	if p := printable(n.Value); p != n.Value {
		return p
	}
	_, err := strconv.ParseFloat(n.Value, 64)
	switch strings.ToLower(n.Value) {
	case "", "true", "false", "null", "~", "yes", "no":
		return strconv.Quote(n.Value)
	}
	if err == nil || strings.ContainsAny(n.Value, "\n,{}[]") {
		return strconv.Quote(n.Value)
	}
	return n.Value
}

// takeTemplates removes the chat_template key from a top-level mapping (tokenizer_config.json,
// chat_template.json, processor_config.json) and returns its templates by name: one string is the
// default template (""), a list holds {name, template} objects.
func takeTemplates(root *yaml.Node) map[string]string {
	if root == nil || root.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "chat_template" {
			continue
		}
		v := root.Content[i+1]
		out := map[string]string{}
		switch v.Kind {
		case yaml.ScalarNode:
			out[""] = v.Value
		case yaml.SequenceNode:
			for _, t := range v.Content {
				if t.Kind != yaml.MappingNode {
					return nil // not a template list: compared as a setting
				}
				_, vals, _ := mappingKeys(t, t)
				name, tpl := vals["name"], vals["template"]
				if name == nil || tpl == nil {
					return nil
				}
				out[name.Value] = tpl.Value
			}
		default:
			return nil
		}
		root.Content = append(root.Content[:i:i], root.Content[i+2:]...)
		return out
	}
	return nil
}

// templatesDiff compares the templates of two files by name, in a stable order.
func templatesDiff(a, b map[string]string) []TemplateChange {
	names := make([]string, 0, len(a)+len(b))
	for n := range a {
		names = append(names, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []TemplateChange
	for _, n := range names {
		x, inA := a[n]
		y, inB := b[n]
		var t TemplateChange
		var ok bool
		switch {
		case !inA:
			t, ok = TemplateChange{Name: n, Kind: "added", NewSHA256: sha(y), AddedLines: len(lines(y))}, true
		case !inB:
			t, ok = TemplateChange{Name: n, Kind: "removed", OldSHA256: sha(x), RemovedLines: len(lines(x))}, true
		default:
			t, ok = templateDiff(n, x, y)
		}
		if ok {
			out = append(out, t)
		}
	}
	return out
}

// templateDiff compares two versions of one template; ok is false when they are equal.
func templateDiff(name, a, b string) (TemplateChange, bool) {
	if a == b {
		return TemplateChange{}, false
	}
	added, removed := lineDelta(lines(a), lines(b))
	return TemplateChange{Name: name, Kind: "changed", OldSHA256: sha(a), NewSHA256: sha(b), AddedLines: added, RemovedLines: removed}, true
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
