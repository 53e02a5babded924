package modelrepo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"

	"lifeboat/internal/base/editdistance"
)

// EngineConfig is a parsed `vllm serve --config` YAML file.
type EngineConfig struct {
	Name     string          // file name used in messages
	Keys     []EngineKey     // every top-level key, in file order
	Unknown  []EngineKey     // keys vLLM does not know (Form KeyUnknown or KeyLegacy)
	Problems []EngineProblem // invalid values and key forms, in file order

	Model             string
	ServedModelNames  []string
	Tokenizer         string
	Quantization      string
	DType             string
	MaxModelLen       int64 // 0 when unset
	MaxModelLenAuto   bool  // -1 or "auto": fit to memory
	EnableLoRA        bool
	MaxLoRARank       int // 16 unless set
	MaxLoRAs          int // 1 unless set
	LoRAModules       []LoRAModule
	ChatTemplate      string
	GenerationConfig  string
	Revision          string
	TokenizerRev      string
	CodeRevision      string
	DownloadDir       string
	HFConfigPath      string
	TrustRemoteCode   bool
	Port              int            // 8000 unless set
	HFOverrides       map[string]any // hf-overrides as JSON values (numbers are json.Number)
	TensorParallel    int            // 1 unless set
	PipelineParallel  int            // 1 unless set
	DataParallel      int            // 1 unless set
	DataParallelLocal int            // 0 unless set
	NNodes            int            // 1 unless set
	ExecutorBackend   string         // distributed-executor-backend
	ConfigPath        string         // --config given on the command line
	// Unresolved lists flags of a command line whose value the lint cannot know (a $(VAR) from a
	// Secret or ConfigMap); their typed fields keep the default. Overrides lists the settings of
	// the config file a command-line flag replaced.
	Unresolved []EngineUnresolved
	Overrides  []EngineOverride
	byFlag     map[string]EngineKey // canonical flag → first key that set it
}

// EngineUnresolved is a command-line flag whose value is not known to the lint.
type EngineUnresolved struct {
	Key EngineKey
	Why string
}

// EngineOverride is a setting of the config file that a command-line flag replaced (vLLM puts
// the config file's flags before the command line's, and the last one wins).
type EngineOverride struct {
	File EngineKey // in the config file
	Flag EngineKey // on the command line
}

// Defaults vLLM applies when the engine config does not set a value.
const (
	DefaultMaxLoRARank = 16
	DefaultMaxLoRAs    = 1
	DefaultPort        = 8000
)

// KeyForm says how a key of the engine config names its flag.
type KeyForm string

const (
	KeyLong       KeyForm = "long"       // max-model-len
	KeyNegated    KeyForm = "negated"    // no-enable-prefix-caching
	KeyDotted     KeyForm = "dotted"     // compilation-config.level (vLLM's dotted JSON keys)
	KeyUnderscore KeyForm = "underscore" // max_model_len: vLLM converts it, but it is not the flag's name
	KeyShort      KeyForm = "short"      // tp: only the CLI has single-dash aliases
	KeyDashes     KeyForm = "dashes"     // --port: the loader adds the dashes itself
	KeyLegacy     KeyForm = "legacy"     // a flag removed from vLLM
	KeyUnknown    KeyForm = "unknown"
	KeyInvalid    KeyForm = "invalid" // not a string
)

// EngineKey is one top-level key of the engine config.
type EngineKey struct {
	Key    string  // as written
	Flag   string  // the long flag it stands for; "" when unknown
	Form   KeyForm //
	Line   int
	Column int
	Note   string // legacy: why it is gone; unknown: "did you mean …"
	File   string // the file that set it: the engine config, or the deploy file of a command line
	Value  string // the value as written (lists joined with ", "); "" for a bare flag
}

// At formats where the key was written: "file:line".
func (k EngineKey) At() string {
	if k.Line > 0 {
		return fmt.Sprintf("%s:%d", k.File, k.Line)
	}
	return k.File
}

// ProblemKind classifies an engine config problem, so a linter can grade them.
type ProblemKind string

const (
	ProblemType       ProblemKind = "type"        // a value vLLM would reject
	ProblemKeyForm    ProblemKind = "key-form"    // short, dashed or non-string key: not applied as intended
	ProblemUnderscore ProblemKind = "underscore"  // underscore spelling of a flag (vLLM accepts it)
	ProblemDuplicate  ProblemKind = "duplicate"   // a flag set twice
	ProblemLoRAModule ProblemKind = "lora-module" // a lora-modules entry vLLM cannot parse
	// ProblemAbbreviation: a command-line flag written as a prefix of its name, which argparse
	// accepts until vLLM adds a flag with the same prefix.
	ProblemAbbreviation ProblemKind = "abbreviation"
)

// EngineProblem is one problem at one line.
type EngineProblem struct {
	Kind ProblemKind
	Line int
	Key  string
	Msg  string
	File string // the file the problem is in, when it is not the one Format is given
}

// Format renders the problem as "name:line: key: msg".
func (p EngineProblem) Format(name string) string {
	if p.File != "" {
		name = p.File
	}
	return fmt.Sprintf("%s:%d: %s: %s", name, p.Line, p.Key, p.Msg)
}

// EngineConfigError lists the problems of an engine config that parsed as a mapping.
type EngineConfigError struct {
	Name     string
	Problems []EngineProblem
}

func (e *EngineConfigError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Format(e.Name)
	}
	return strings.Join(lines, "\n")
}

// LoRAModule is one --lora-modules entry.
type LoRAModule struct {
	Name          string
	Path          string
	BaseModelName string
	Line          int
	Form          string // "name=path", "json" or "yaml-map"
}

// Key returns the key that set flag (by its long name), if any.
func (c *EngineConfig) Key(flag string) (EngineKey, bool) {
	k, ok := c.byFlag[flag]
	return k, ok
}

// Line returns the line of the key that set flag, or 0.
func (c *EngineConfig) Line(flag string) int { return c.byFlag[flag].Line }

// Has reports whether the config sets flag (in any accepted spelling).
func (c *EngineConfig) Has(flag string) bool {
	_, ok := c.byFlag[flag]
	return ok
}

// KnownEngineFlag reports whether name is a current long flag of `vllm serve`.
func KnownEngineFlag(name string) bool {
	_, ok := engineFlags[name]
	return ok
}

// EngineFlagNames returns every known long flag name, sorted.
func EngineFlagNames() []string {
	out := make([]string, 0, len(engineFlags))
	for k := range engineFlags {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// MaxEngineConfigBytes bounds what ParseEngineConfig reads.
const MaxEngineConfigBytes = 4 << 20

// ParseEngineConfig parses the YAML file given to `vllm serve --config`. It returns an error
// without a config when the file is not a single YAML mapping. When the mapping holds invalid
// values, bad key spellings or duplicates, it returns the config (with those values left unset)
// together with an *EngineConfigError listing every problem; unknown keys are not errors, they are
// listed in Unknown.
func ParseEngineConfig(data []byte, name string) (cfg *EngineConfig, err error) {
	defer func() {
		if p := recover(); p != nil {
			cfg, err = nil, fmt.Errorf("%s: cannot parse YAML: %v", name, p)
		}
	}()
	if len(data) > MaxEngineConfigBytes {
		return nil, fmt.Errorf("%s: %d bytes is too large for an engine config (limit %d)", name, len(data), MaxEngineConfigBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty document: want a mapping of vLLM flag names to values", name)
		}
		return nil, yamlError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("%s:%d: a second YAML document: vLLM reads exactly one", name, max(extra.Line, 1))
	} else if !errors.Is(err, io.EOF) {
		return nil, yamlError(name, err)
	}
	root, err := engineRoot(&doc, name)
	if err != nil {
		return nil, err
	}
	p := newEngineParser(name)
	for _, kv := range mappingPairs(root) {
		p.pair(kv[0], kv[1])
	}
	cfg = p.cfg
	if len(cfg.Problems) > 0 {
		return cfg, &EngineConfigError{Name: name, Problems: cfg.Problems}
	}
	return cfg, nil
}

func newEngineParser(name string) *engineParser {
	return &engineParser{cfg: &EngineConfig{
		Name:             name,
		MaxLoRARank:      DefaultMaxLoRARank,
		MaxLoRAs:         DefaultMaxLoRAs,
		Port:             DefaultPort,
		TensorParallel:   1,
		PipelineParallel: 1,
		DataParallel:     1,
		NNodes:           1,
		byFlag:           map[string]EngineKey{},
	}, seenKey: map[string]int{}, src: name}
}

// engineRoot returns the mapping of a decoded engine config document.
func engineRoot(doc *yaml.Node, name string) (*yaml.Node, error) {
	root := doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, fmt.Errorf("%s: empty document: want a mapping of vLLM flag names to values", name)
		}
		root = deref(root.Content[0])
	}
	if root == nil || root.Kind != yaml.MappingNode {
		what := "nothing"
		line := 1
		if root != nil {
			what, line = kindName(root), root.Line
		}
		return nil, fmt.Errorf("%s:%d: want a mapping of vLLM flag names to values, got %s", name, line, what)
	}
	return root, nil
}

// mappingPairs returns the key/value pairs of a mapping, expanding YAML merge keys ("<<") the way
// PyYAML does: keys written explicitly win over merged ones.
func mappingPairs(m *yaml.Node) [][2]*yaml.Node {
	var explicit, merged [][2]*yaml.Node
	has := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			src := deref(v)
			var maps []*yaml.Node
			if src != nil && src.Kind == yaml.MappingNode {
				maps = append(maps, src)
			} else if src != nil && src.Kind == yaml.SequenceNode {
				for _, c := range src.Content {
					if c = deref(c); c != nil && c.Kind == yaml.MappingNode {
						maps = append(maps, c)
					}
				}
			}
			for _, mm := range maps {
				for j := 0; j+1 < len(mm.Content); j += 2 {
					if mk := mm.Content[j]; mk.Kind != yaml.ScalarNode || mk.Tag != "!!merge" {
						merged = append(merged, [2]*yaml.Node{mk, mm.Content[j+1]})
					}
				}
			}
			continue
		}
		explicit = append(explicit, [2]*yaml.Node{k, v})
		if k.Kind == yaml.ScalarNode {
			has[k.Value] = true
		}
	}
	for _, kv := range merged {
		if !has[kv[0].Value] {
			has[kv[0].Value] = true
			explicit = append(explicit, kv)
		}
	}
	return explicit
}

type engineParser struct {
	cfg     *EngineConfig
	seenKey map[string]int // flag (or raw key) → line
	src     string         // the file being read: stamps keys and problems
	written string         // a command-line flag as written, for the key being read
}

func (p *engineParser) problem(kind ProblemKind, line int, key, format string, args ...any) {
	pr := EngineProblem{Kind: kind, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
	if p.src != p.cfg.Name {
		pr.File = p.src
	}
	p.cfg.Problems = append(p.cfg.Problems, pr)
}

func (p *engineParser) pair(kn, vn *yaml.Node) {
	kn = deref(kn)
	vn = deref(vn)
	if kn == nil || vn == nil {
		return
	}
	if kn.Kind != yaml.ScalarNode {
		p.problem(ProblemKeyForm, kn.Line, "key", "a key must be a flag name, got %s", kindName(kn))
		p.cfg.Keys = append(p.cfg.Keys, EngineKey{Form: KeyInvalid, Line: kn.Line, Column: kn.Column})
		return
	}
	if k, _ := resolveScalar(kn); k != kStr {
		p.problem(ProblemKeyForm, kn.Line, kn.Value, "a key must be a flag name, got %s (quote it if it is meant as a name)", kindName(kn))
		p.cfg.Keys = append(p.cfg.Keys, EngineKey{Key: kn.Value, Form: KeyInvalid, Line: kn.Line, Column: kn.Column})
		return
	}
	ek := classifyEngineKey(kn.Value, len(p.cfg.Unknown) < maxSuggestions)
	ek.Line, ek.Column, ek.File, ek.Value = kn.Line, kn.Column, p.src, nodeText(vn)
	if p.written != "" {
		ek.Key = p.written
	}
	p.cfg.Keys = append(p.cfg.Keys, ek)

	dupKey := ek.Flag
	if dupKey == "" || ek.Form == KeyDotted {
		dupKey = "\x00" + ek.Key
	}
	if prev, ok := p.seenKey[dupKey]; ok {
		p.problem(ProblemDuplicate, kn.Line, ek.Key, "set again (first set on line %d); vLLM would silently use one of them", prev)
		return
	}
	p.seenKey[dupKey] = kn.Line

	switch ek.Form {
	case KeyUnknown, KeyLegacy:
		p.cfg.Unknown = append(p.cfg.Unknown, ek)
		return
	case KeyShort:
		p.problem(ProblemKeyForm, kn.Line, ek.Key, "%q is a command-line short option (-%s); in the config file write the long name %q", ek.Key, ek.Key, ek.Flag)
		return
	case KeyDashes:
		if ek.Flag != "" {
			p.problem(ProblemKeyForm, kn.Line, ek.Key, "write the flag without leading dashes (%q): vLLM adds \"--\" to every key", ek.Flag)
		} else {
			p.problem(ProblemKeyForm, kn.Line, ek.Key, "write flag names without leading dashes: vLLM adds \"--\" to every key")
		}
		return
	case KeyUnderscore:
		p.problem(ProblemUnderscore, kn.Line, ek.Key, "use the flag's long name %q (vLLM converts underscores, but the documented config keys are the long flag names)", displayFlag(ek))
	}
	if _, ok := p.cfg.byFlag[ek.Flag]; !ok {
		p.cfg.byFlag[ek.Flag] = ek
	}
	if ek.Form == KeyDotted {
		return
	}
	p.value(ek, vn)
}

func displayFlag(ek EngineKey) string {
	if ek.Form == KeyNegated || strings.HasPrefix(strings.ReplaceAll(ek.Key, "_", "-"), "no-") {
		return "no-" + ek.Flag
	}
	return ek.Flag
}

// maxSuggestions bounds the "did you mean" searches per file.
const maxSuggestions = 64

// classifyEngineKey says which flag a key names and how; suggest enables the search for a close
// known flag when the key is unknown.
func classifyEngineKey(k string, suggest bool) EngineKey {
	ek := EngineKey{Key: k}
	canon := func(s string) (string, KeyForm, bool) {
		if _, ok := engineFlags[s]; ok {
			return s, KeyLong, true
		}
		if rest, ok := strings.CutPrefix(s, "no-"); ok && engineFlags[rest] == tBool {
			return rest, KeyNegated, true
		}
		return "", "", false
	}
	if f, form, ok := canon(k); ok {
		ek.Flag, ek.Form = f, form
		return ek
	}
	if i := strings.IndexByte(k, '.'); i > 0 && !strings.HasPrefix(k, "-") {
		base := strings.ReplaceAll(k[:i], "_", "-")
		if engineFlags[base] == tJSON {
			ek.Flag, ek.Form = base, KeyDotted
			return ek
		}
	}
	if strings.HasPrefix(k, "-") {
		ek.Form = KeyDashes
		t := strings.TrimLeft(k, "-")
		if f, _, ok := canon(strings.ReplaceAll(t, "_", "-")); ok {
			ek.Flag = f
		} else if f, ok := engineShortFlags[t]; ok {
			ek.Flag = f
		}
		return ek
	}
	if f, ok := engineShortFlags[k]; ok {
		ek.Flag, ek.Form = f, KeyShort
		return ek
	}
	if strings.Contains(k, "_") {
		if f, form, ok := canon(strings.ReplaceAll(k, "_", "-")); ok {
			ek.Flag, ek.Form = f, KeyUnderscore
			if form == KeyNegated {
				ek.Note = "negated"
			}
			return ek
		}
	}
	dashed := strings.ReplaceAll(k, "_", "-")
	if note, ok := engineLegacyFlags[dashed]; ok {
		ek.Form, ek.Note = KeyLegacy, note
		return ek
	}
	ek.Form = KeyUnknown
	if !suggest {
		return ek
	}
	// argparse accepts an unambiguous prefix of a long option (allow_abbrev), so such a key works
	// today but breaks as soon as vLLM adds a flag with the same prefix.
	var prefixOf []string
	for f := range engineFlags {
		if strings.HasPrefix(f, dashed) {
			prefixOf = append(prefixOf, f)
		}
	}
	if len(prefixOf) == 1 && dashed != "" {
		ek.Note = "vLLM's argument parser takes it as an abbreviation of " + strconv.Quote(prefixOf[0]) + ", which breaks when a flag with the same prefix is added; write the full name"
		return ek
	}
	if s := suggestFlag(dashed); s != "" {
		ek.Note = "did you mean " + strconv.Quote(s) + "?"
	}
	return ek
}

// suggestFlag returns the known flag closest to k (the one did-you-mean ranking,
// editdistance.Suggest), or "" when none is close.
func suggestFlag(k string) string {
	return editdistance.Best(strings.ToLower(k), engineFlagNames())
}

// engineFlagNames lists the known flags once.
var engineFlagNames = sync.OnceValue(func() []string {
	names := make([]string, 0, len(engineFlags))
	for f := range engineFlags {
		names = append(names, f)
	}
	return names
})

// value type-checks one value and fills the typed fields.
// Where the values of the flags Lifeboat reads land in EngineConfig. Every other flag is checked
// for its type and dropped.
var (
	engineBoolFields = map[string]func(*EngineConfig) *bool{
		"enable-lora":       func(c *EngineConfig) *bool { return &c.EnableLoRA },
		"trust-remote-code": func(c *EngineConfig) *bool { return &c.TrustRemoteCode },
	}
	engineIntFields = map[string]func(*EngineConfig) *int{
		"max-lora-rank":            func(c *EngineConfig) *int { return &c.MaxLoRARank },
		"max-loras":                func(c *EngineConfig) *int { return &c.MaxLoRAs },
		"tensor-parallel-size":     func(c *EngineConfig) *int { return &c.TensorParallel },
		"pipeline-parallel-size":   func(c *EngineConfig) *int { return &c.PipelineParallel },
		"data-parallel-size":       func(c *EngineConfig) *int { return &c.DataParallel },
		"data-parallel-size-local": func(c *EngineConfig) *int { return &c.DataParallelLocal },
		"nnodes":                   func(c *EngineConfig) *int { return &c.NNodes },
	}
	engineStrFields = map[string]func(*EngineConfig) *string{
		"model":              func(c *EngineConfig) *string { return &c.Model },
		"tokenizer":          func(c *EngineConfig) *string { return &c.Tokenizer },
		"quantization":       func(c *EngineConfig) *string { return &c.Quantization },
		"dtype":              func(c *EngineConfig) *string { return &c.DType },
		"chat-template":      func(c *EngineConfig) *string { return &c.ChatTemplate },
		"generation-config":  func(c *EngineConfig) *string { return &c.GenerationConfig },
		"revision":           func(c *EngineConfig) *string { return &c.Revision },
		"tokenizer-revision": func(c *EngineConfig) *string { return &c.TokenizerRev },
		"code-revision":      func(c *EngineConfig) *string { return &c.CodeRevision },
		"download-dir":       func(c *EngineConfig) *string { return &c.DownloadDir },
		"hf-config-path":     func(c *EngineConfig) *string { return &c.HFConfigPath },
		"config":             func(c *EngineConfig) *string { return &c.ConfigPath },

		"distributed-executor-backend": func(c *EngineConfig) *string { return &c.ExecutorBackend },
	}
)

// engineValue is one key's value being checked against its flag's type.
type engineValue struct {
	p   *engineParser
	ek  EngineKey
	vn  *yaml.Node
	typ flagType
	// isNull: null becomes the string "None", which optional flags read as unset and booleans
	// reject.
	isNull bool
}

func (v engineValue) bad(format string, args ...any) {
	line := v.vn.Line
	if line == 0 {
		line = v.ek.Line
	}
	v.p.problem(ProblemType, line, v.ek.Key, format, args...)
}

func (v engineValue) negated() bool { return v.ek.Form == KeyNegated || v.ek.Note == "negated" }

// value checks one key's value against its flag's type, as vLLM's argparse would read it, and
// records the flags Lifeboat needs in p.cfg.
func (p *engineParser) value(ek EngineKey, vn *yaml.Node) {
	if ek.Flag == "lora-modules" {
		p.loraModules(ek, vn)
		return
	}
	v := engineValue{p: p, ek: ek, vn: vn, typ: engineFlags[ek.Flag]}
	if v.negated() {
		v.typ = tBool
	}
	v.isNull = vn.Kind == yaml.ScalarNode && func() bool { k, _ := resolveScalar(vn); return k == kNull }()
	if vn.Kind == yaml.SequenceNode && len(vn.Content) == 0 {
		return // vLLM drops an empty list
	}
	switch v.typ {
	case tBool, tSwitch:
		v.boolean()
	case tJSON:
		v.json()
	case tList:
		v.list()
	case tAny:
	default:
		v.single()
	}
}

func (v engineValue) boolean() {
	if v.vn.Kind != yaml.ScalarNode {
		v.bad("want true or false, got %s", kindName(v.vn))
		return
	}
	k, b := resolveScalar(v.vn)
	if k != kBool {
		v.bad("want true or false, got %s", kindName(v.vn))
		return
	}
	if v.negated() {
		if !b {
			return // --no-no-FLAG does not exist: vLLM drops it
		}
		b = false
	}
	if f := engineBoolFields[v.ek.Flag]; f != nil {
		*f(v.p.cfg) = b
	}
}

func (v engineValue) json() {
	switch {
	case v.vn.Kind == yaml.SequenceNode:
		v.bad("want a mapping (or a JSON string), got %s", kindName(v.vn))
		return
	case v.vn.Kind == yaml.ScalarNode:
		if k, _ := resolveScalar(v.vn); k == kBool {
			v.bad("want a mapping (or a JSON string), got %s", kindName(v.vn))
			return
		}
	}
	if v.ek.Flag == "hf-overrides" && !v.isNull {
		v.p.hfOverrides(v.ek, v.vn)
	}
}

func (v engineValue) list() {
	if k, _ := resolveScalar(v.vn); v.vn.Kind == yaml.ScalarNode && k == kBool || v.vn.Kind == yaml.MappingNode {
		v.bad("want a string or a list of strings, got %s", kindName(v.vn))
		return
	}
	items := []*yaml.Node{v.vn}
	if v.vn.Kind == yaml.SequenceNode {
		items = v.vn.Content
	}
	var vals []string
	for i, it := range items {
		it = deref(it)
		if it == nil || it.Kind != yaml.ScalarNode {
			v.bad("item %d: want a string, got %s", i, kindName(it))
			return
		}
		vals = append(vals, pyStr(it))
	}
	if !v.isNull && v.ek.Flag == "served-model-name" {
		v.p.cfg.ServedModelNames = vals
	}
}

// single checks a single-valued flag.
func (v engineValue) single() {
	if v.isNull {
		return
	}
	if v.vn.Kind != yaml.ScalarNode {
		v.bad("want a single value, got %s", kindName(v.vn))
		return
	}
	if k, _ := resolveScalar(v.vn); k == kBool {
		v.bad("want a value, got %s (a boolean becomes a bare --%s flag)", kindName(v.vn), v.ek.Flag)
		return
	}
	switch v.typ {
	case tInt:
		v.integer()
	case tHumanInt, tLenAuto:
		v.length()
	case tFloat:
		if _, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(v.vn.Value), "_", ""), 64); err != nil {
			v.bad("want a number, got %s", kindName(v.vn))
		}
	case tStr:
		if f := engineStrFields[v.ek.Flag]; f != nil {
			*f(v.p.cfg) = pyStr(v.vn)
		}
	}
}

func (v engineValue) integer() {
	n, ok := scalarInt(v.vn)
	if !ok {
		v.bad("want an integer, got %s", kindName(v.vn))
		return
	}
	if f := engineIntFields[v.ek.Flag]; f != nil {
		v.p.intField(f(v.p.cfg), n, v.bad)
		return
	}
	if v.ek.Flag == "port" {
		if n < 0 || n > 65535 {
			v.bad("port %d is out of range", n)
			return
		}
		v.p.cfg.Port = int(n)
	}
}

// length reads a human-readable integer (4096, 32k, 32K), or auto/-1 where the flag allows it.
func (v engineValue) length() {
	s := pyStr(v.vn)
	if v.typ == tLenAuto && (strings.TrimSpace(s) == "-1" || strings.EqualFold(strings.TrimSpace(s), "auto")) {
		if v.ek.Flag == "max-model-len" {
			v.p.cfg.MaxModelLenAuto = true
		}
		return
	}
	n, err := ParseHumanInt(s)
	if err != nil {
		forms := "4096, 32k = 32000, 32K = 32768"
		if v.typ == tLenAuto {
			forms += ", or auto"
		}
		v.bad("want an integer (%s), got %s: %v", forms, kindName(v.vn), err)
		return
	}
	if v.ek.Flag == "max-model-len" {
		if n <= 0 {
			v.bad("want a positive length, got %d", n)
			return
		}
		v.p.cfg.MaxModelLen = n
	}
}

func (p *engineParser) intField(dst *int, v int64, bad func(string, ...any)) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		bad("%d is out of range", v)
		return
	}
	*dst = int(v)
}

// scalarInt is what Python's int(str(value)) gives for a scalar PyYAML loaded.
func scalarInt(n *yaml.Node) (int64, bool) {
	k, _ := resolveScalar(n)
	switch k {
	case kInt:
		v, err := yamlInt(n.Value)
		return v, err == nil
	case kStr:
		return pyIntString(n.Value)
	}
	return 0, false
}

var humanInt = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)([kKmMgGtT])$`)

// ParseHumanInt parses vLLM's human-readable integers (vllm/utils/argparse_utils.py
// human_readable_int): a plain integer, or a number with a suffix — lower case k/m/g/t are powers
// of 10 (decimals allowed: 25.6k = 25600), upper case K/M/G/T powers of 2 (integers only:
// 32K = 32768).
func ParseHumanInt(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if m := humanInt.FindStringSubmatch(s); m != nil {
		num, suf := m[1], m[2]
		if suf == strings.ToLower(suf) {
			mult := map[string]float64{"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[suf]
			f, err := strconv.ParseFloat(num, 64)
			if err != nil || f*mult >= math.MaxInt64/2 {
				return 0, fmt.Errorf("%q is out of range", s)
			}
			return int64(f * mult), nil
		}
		shift := map[string]uint{"K": 10, "M": 20, "G": 30, "T": 40}[suf]
		if strings.Contains(num, ".") {
			return 0, fmt.Errorf("decimals are not allowed with binary suffix %s (did you mean %s%s?)", suf, num, strings.ToLower(suf))
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil || v > math.MaxInt64>>shift {
			return 0, fmt.Errorf("%q is out of range", s)
		}
		return v << shift, nil
	}
	v, ok := pyIntString(s)
	if !ok {
		return 0, fmt.Errorf("%q is not an integer", clip(s, 40))
	}
	return v, nil
}

func (p *engineParser) hfOverrides(ek EngineKey, vn *yaml.Node) {
	var v any
	switch vn.Kind {
	case yaml.MappingNode:
		budget := 10000
		var err error
		if v, err = nodeToAny(vn, &budget, 0); err != nil {
			p.problem(ProblemType, vn.Line, ek.Key, "%v", err)
			return
		}
	case yaml.ScalarNode:
		dec := json.NewDecoder(strings.NewReader(vn.Value))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			p.problem(ProblemType, vn.Line, ek.Key, "want a mapping or a JSON object string: %v", err)
			return
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		p.problem(ProblemType, vn.Line, ek.Key, "want a mapping of config.json keys to values")
		return
	}
	p.cfg.HFOverrides = m
}

// loraModules parses lora-modules the way vLLM's LoRAParserAction does after the config loader
// turned each list item into a command-line string with Python's str().
func (p *engineParser) loraModules(ek EngineKey, vn *yaml.Node) {
	items := []*yaml.Node{vn}
	switch vn.Kind {
	case yaml.SequenceNode:
		items = vn.Content
	case yaml.MappingNode:
		p.problem(ProblemLoRAModule, vn.Line, ek.Key, "want a list of adapters (\"name=path\" or JSON object strings), got a mapping")
		return
	case yaml.ScalarNode:
		if k, _ := resolveScalar(vn); k == kNull {
			return
		}
	}
	for i, it := range items {
		it = deref(it)
		if it == nil {
			continue
		}
		key := fmt.Sprintf("%s[%d]", ek.Key, i)
		bad := func(format string, args ...any) { p.problem(ProblemLoRAModule, it.Line, key, format, args...) }
		switch it.Kind {
		case yaml.MappingNode:
			// PyYAML loads it as a dict and vLLM's loader passes str(dict) — Python repr with single
			// quotes, which json.loads rejects: vLLM exits with "Invalid JSON format for --lora-modules".
			m := LoRAModule{Line: it.Line, Form: "yaml-map"}
			for j := 0; j+1 < len(it.Content); j += 2 {
				k, v := deref(it.Content[j]), deref(it.Content[j+1])
				if k == nil || v == nil || k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
					continue
				}
				switch k.Value {
				case "name":
					m.Name = pyStr(v)
				case "path":
					m.Path = pyStr(v)
				case "base_model_name":
					m.BaseModelName = pyStr(v)
				}
			}
			p.cfg.LoRAModules = append(p.cfg.LoRAModules, m)
			bad("a YAML mapping is passed to vLLM as Python's str() of a dict, which is not JSON; vLLM refuses to start (\"Invalid JSON format for --lora-modules\"). Write the entry as a quoted JSON string: '{\"name\": \"%s\", \"path\": \"%s\"}'", m.Name, m.Path)
		case yaml.ScalarNode:
			s := pyStr(it)
			if k, _ := resolveScalar(it); k == kNull || s == "" {
				continue // vLLM skips empty entries
			}
			m, err := ParseLoRAModule(s)
			if err != nil {
				bad("%v", err)
				continue
			}
			m.Line = it.Line
			p.cfg.LoRAModules = append(p.cfg.LoRAModules, m)
		default:
			bad("want \"name=path\" or a JSON object string, got %s", kindName(it))
		}
	}
}

// ParseLoRAModule parses one --lora-modules argument as vLLM does: "name=path" when it has an "="
// and no ",", else a JSON object {"name", "path", "base_model_name"}.
func ParseLoRAModule(s string) (LoRAModule, error) {
	if strings.Contains(s, "=") && !strings.Contains(s, ",") {
		parts := strings.Split(s, "=")
		if len(parts) != 2 {
			return LoRAModule{}, fmt.Errorf("%q: \"name=path\" form with more than one \"=\"", clip(s, 80))
		}
		if parts[0] == "" || parts[1] == "" {
			return LoRAModule{}, fmt.Errorf("%q: \"name=path\" needs both a name and a path", clip(s, 80))
		}
		return LoRAModule{Name: parts[0], Path: parts[1], Form: "name=path"}, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return LoRAModule{}, fmt.Errorf("%q is neither \"name=path\" nor a JSON object", clip(s, 80))
	}
	if dec.More() {
		return LoRAModule{}, fmt.Errorf("%q: trailing data after the JSON object", clip(s, 80))
	}
	m := LoRAModule{Form: "json"}
	var unknown []string
	for k, v := range raw {
		switch k {
		case "name", "path", "base_model_name":
		default:
			unknown = append(unknown, k)
			continue
		}
		if v == nil && k == "base_model_name" {
			continue
		}
		str, ok := v.(string)
		if !ok {
			return LoRAModule{}, fmt.Errorf("field %s: want a string, got %s", k, typeName(v))
		}
		switch k {
		case "name":
			m.Name = str
		case "path":
			m.Path = str
		case "base_model_name":
			m.BaseModelName = str
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return LoRAModule{}, fmt.Errorf("unknown field(s) %s: vLLM accepts name, path and base_model_name", strings.Join(unknown, ", "))
	}
	if _, ok := raw["name"]; !ok {
		return LoRAModule{}, fmt.Errorf("field name is missing")
	}
	if _, ok := raw["path"]; !ok {
		return LoRAModule{}, fmt.Errorf("field path is missing")
	}
	return m, nil
}

// nodeText renders a value node for messages and comparisons: a scalar as written, a list of
// scalars joined with ", ".
func nodeText(n *yaml.Node) string {
	switch {
	case n == nil:
		return ""
	case n.Kind == yaml.ScalarNode:
		return n.Value
	case n.Kind == yaml.SequenceNode:
		parts := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if c = deref(c); c != nil && c.Kind == yaml.ScalarNode {
				parts = append(parts, c.Value)
			}
		}
		return strings.Join(parts, ", ")
	}
	return kindName(n)
}
