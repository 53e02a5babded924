package modelrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Reading the vLLM server a container starts: which words of its command line are vLLM's
// arguments (vllm serve, python -m vllm.entrypoints.openai.api_server, the image's entry point,
// or either inside an `sh -c` script), and what argparse makes of them.

// ServeCommand is a vLLM server start found in a container's command line.
type ServeCommand struct {
	Entry string    // how vLLM is started, e.g. "vllm serve" or "the image's entry point"
	Line  int       // line of the word that starts it
	Shell bool      // inside an sh -c script
	Args  []ArgWord // the words after the entry point, expanded
	// Positional is true when the entry point takes a positional model (vllm serve MODEL).
	Positional bool
}

var pythonRe = regexp.MustCompile(`^python[0-9.]*$`)

// vllmModules are the modules `python -m` starts vLLM's OpenAI-compatible server with.
var vllmModules = map[string]bool{
	"vllm.entrypoints.openai.api_server": true,
	"vllm.entrypoints.api_server":        true,
}

var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "ash": true, "zsh": true}

// FindServeCommand finds the vLLM server a container starts. The container's command and args
// are expanded as the kubelet does ($(VAR) from its env); an `sh -c` script is split into
// commands, with $VAR expanded from the same env. A container without command whose image is a
// vLLM image runs the image's entry point (vllm serve) with args as its flags.
func FindServeCommand(c Container) (ServeCommand, bool) {
	env := NewContainerEnv(c)
	expand := func(ws []ArgWord) []ArgWord {
		out := make([]ArgWord, len(ws))
		for i, w := range ws {
			out[i] = w
			out[i].Text, out[i].Unknown = env.Expand(w.Text)
		}
		return out
	}
	cmd, args := expand(c.Exec.Command), expand(c.Exec.Args)
	words := append(append([]ArgWord{}, cmd...), args...)
	if len(cmd) == 0 && strings.Contains(strings.ToLower(c.Image), "vllm") {
		if len(args) > 0 && args[0].Text == "serve" {
			return ServeCommand{Entry: "vllm serve (the image's entry point)", Line: args[0].Line, Args: args[1:], Positional: true}, true
		}
		if len(args) == 0 || strings.HasPrefix(args[0].Text, "-") {
			line := c.Line
			if len(args) > 0 {
				line = args[0].Line
			}
			return ServeCommand{Entry: "the image's entry point (vllm serve)", Line: line, Args: args, Positional: true}, true
		}
	}
	if sc, ok := matchServe(words); ok {
		return sc, true
	}
	// sh -c SCRIPT, bash -lc SCRIPT, …
	if len(words) >= 3 && shells[path.Base(words[0].Text)] {
		for i := 1; i < len(words)-1; i++ {
			w := words[i].Text
			if !strings.HasPrefix(w, "-") {
				break
			}
			if strings.Contains(w, "c") && !strings.HasPrefix(w, "--") {
				script := words[i+1]
				// The kubelet has expanded $(VAR) already; the shell expands $VAR.
				for _, cmdWords := range shellCommands(script, env) {
					if sc, ok := matchServe(cmdWords); ok {
						sc.Shell = true
						return sc, true
					}
				}
				break
			}
		}
	}
	return ServeCommand{}, false
}

// matchServe recognises a vLLM server start at the beginning of a simple command, after
// variable assignments and wrappers such as exec and env.
func matchServe(ws []ArgWord) (ServeCommand, bool) {
	i := 0
	for i < len(ws) {
		t := ws[i].Text
		switch {
		case t == "exec" || t == "nohup" || t == "env" || t == "time" || t == "stdbuf":
			i++
		case strings.Contains(t, "=") && !strings.HasPrefix(t, "-") && validShellName(t[:strings.IndexByte(t, '=')]):
			i++
		case strings.HasPrefix(t, "-") && i > 0 && (ws[i-1].Text == "env" || ws[i-1].Text == "stdbuf"):
			i++
		default:
			goto found
		}
	}
	return ServeCommand{}, false
found:
	ws = ws[i:]
	base := path.Base(ws[0].Text)
	switch {
	case base == "vllm" && len(ws) > 1 && ws[1].Text == "serve":
		return ServeCommand{Entry: "vllm serve", Line: ws[0].Line, Args: ws[2:], Positional: true}, true
	case pythonRe.MatchString(base):
		for j := 1; j+1 < len(ws); j++ {
			if ws[j].Text == "-m" {
				mod := ws[j+1].Text
				if vllmModules[mod] {
					return ServeCommand{Entry: base + " -m " + mod, Line: ws[0].Line, Args: ws[j+2:]}, true
				}
				if mod == "vllm.entrypoints.cli.main" && j+2 < len(ws) && ws[j+2].Text == "serve" {
					return ServeCommand{Entry: base + " -m " + mod + " serve", Line: ws[0].Line, Args: ws[j+3:], Positional: true}, true
				}
				return ServeCommand{}, false
			}
			if !strings.HasPrefix(ws[j].Text, "-") {
				return ServeCommand{}, false
			}
		}
	}
	return ServeCommand{}, false
}

// ServeFlag is one option of a vLLM command line, resolved to its long flag.
type ServeFlag struct {
	Written string    // as written, e.g. "--max-num-seq" or "-tp"
	Flag    string    // the long flag, e.g. "max-num-seqs"; "" when unknown
	Negated bool      // --no-FLAG
	Dotted  bool      // --json-flag.key value
	Values  []ArgWord // none for a switch
	Line    int
	Note    string // an abbreviation's full name
}

// ServeArgs is a vLLM command line, parsed as argparse does.
type ServeArgs struct {
	Name       string // the deploy file, for messages
	Flags      []ServeFlag
	Positional []ArgWord
	Problems   []EngineProblem
}

// optionKind is how many values an option takes.
type optionArity uint8

const (
	arityOne optionArity = iota
	arityNone
	arityPlus     // nargs="+"
	arityOptional // nargs="?"
)

func flagArity(flag string, negated bool) optionArity {
	if negated {
		return arityNone
	}
	switch flag {
	case "lora-modules":
		return arityPlus
	case "hf-token":
		return arityOptional
	}
	switch engineFlags[flag] {
	case tBool, tSwitch:
		return arityNone
	case tList:
		return arityPlus
	}
	return arityOne
}

var negativeNumber = regexp.MustCompile(`^-\d+$|^-\d*\.\d+$`)

func isOption(w ArgWord) bool {
	return strings.HasPrefix(w.Text, "-") && len(w.Text) > 1 && !negativeNumber.MatchString(w.Text)
}

// longOptions are every "--" option of vllm serve: the flags and the --no- forms of booleans.
var longOptions = func() []string {
	var out []string
	for f, t := range engineFlags {
		out = append(out, f)
		if t == tBool {
			out = append(out, "no-"+f)
		}
	}
	sort.Strings(out)
	return out
}()

// resolveLong resolves the name of a "--" option (without dashes) as vLLM's parser does:
// underscores become dashes, an exact name wins, else a unique prefix (argparse's allow_abbrev).
func resolveLong(name string) (flag string, negated bool, note string, err error) {
	name = strings.ReplaceAll(name, "_", "-")
	exact := func(n string) (string, bool, bool) {
		if _, ok := engineFlags[n]; ok {
			return n, false, true
		}
		if rest, ok := strings.CutPrefix(n, "no-"); ok && engineFlags[rest] == tBool {
			return rest, true, true
		}
		return "", false, false
	}
	if f, neg, ok := exact(name); ok {
		return f, neg, "", nil
	}
	var matches []string
	i := sort.SearchStrings(longOptions, name)
	for ; i < len(longOptions) && strings.HasPrefix(longOptions[i], name); i++ {
		matches = append(matches, longOptions[i])
	}
	switch {
	case len(matches) == 1 && name != "":
		f, neg, _ := exact(matches[0])
		return f, neg, "--" + matches[0], nil
	case len(matches) > 1:
		shown := matches
		if len(shown) > 6 {
			shown = shown[:6]
		}
		return "", false, "", fmt.Errorf("ambiguous option: --%s could match --%s: vLLM refuses to start", name, strings.Join(shown, ", --"))
	}
	if note, ok := engineLegacyFlags[name]; ok {
		return "", false, "", fmt.Errorf("--%s was a vllm serve flag but is gone (%s): vLLM refuses to start (\"unrecognized arguments\")", name, note)
	}
	msg := fmt.Sprintf("--%s is not a vllm serve flag (flag list of %s): vLLM refuses to start (\"unrecognized arguments\")", name, EngineFlagsVersion)
	if s := suggestFlag(name); s != "" {
		msg += "; did you mean --" + s + "?"
	}
	return "", false, "", errors.New(msg)
}

// ParseServeArgs parses the words after vLLM's entry point.
func ParseServeArgs(words []ArgWord, name string) *ServeArgs {
	a := &ServeArgs{Name: name}
	bad := func(w ArgWord, key, format string, args ...any) {
		a.Problems = append(a.Problems, EngineProblem{Kind: ProblemType, Line: w.Line, Key: key, Msg: fmt.Sprintf(format, args...), File: name})
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w.Text == "--" {
			a.Positional = append(a.Positional, words[i+1:]...)
			break
		}
		if !isOption(w) {
			a.Positional = append(a.Positional, w)
			continue
		}
		text, explicit, hasExplicit := w.Text, "", false
		if k := strings.IndexByte(text, '='); k > 0 {
			text, explicit, hasExplicit = text[:k], text[k+1:], true
		}
		f := ServeFlag{Written: text, Line: w.Line}
		if strings.HasPrefix(text, "--") {
			opt := text[2:]
			if k := strings.IndexByte(opt, '.'); k > 0 && engineFlags[strings.ReplaceAll(opt[:k], "_", "-")] == tJSON {
				f.Flag, f.Dotted = strings.ReplaceAll(opt[:k], "_", "-"), true
			} else {
				flag, neg, note, err := resolveLong(opt)
				if err != nil {
					bad(w, text, "%v", err)
					continue
				}
				f.Flag, f.Negated, f.Note = flag, neg, note
				if note != "" {
					a.Problems = append(a.Problems, EngineProblem{Kind: ProblemAbbreviation, Line: w.Line, Key: text, File: name,
						Msg: fmt.Sprintf("vLLM's argument parser takes it as an abbreviation of %s; it breaks when vLLM adds a flag with the same prefix: write the full name", note)})
				}
			}
		} else {
			short := text[1:]
			if k := strings.IndexByte(short, '.'); k > 0 {
				short = short[:k] // -O.level, -cc.mode: dotted forms of JSON flags
				f.Dotted = true
			}
			long, ok := engineShortFlags[short]
			if !ok && len(short) > 1 {
				// argparse lets a single-dash option carry its value attached: -O3
				if l, ok1 := engineShortFlags[short[:1]]; ok1 && !hasExplicit {
					long, ok, explicit, hasExplicit = l, true, short[1:], true
				}
			}
			if !ok {
				bad(w, text, "%s is not a vllm serve option: vLLM refuses to start (\"unrecognized arguments\")", text)
				continue
			}
			f.Flag = long
		}
		arity := flagArity(f.Flag, f.Negated)
		if f.Dotted {
			arity = arityOne
		}
		vw := w
		vw.Text = explicit
		switch {
		case arity == arityNone && hasExplicit:
			bad(w, text, "argument %s: ignored explicit argument %q: vLLM refuses to start (a boolean flag takes no value; write %s or --no-%s)", text, explicit, "--"+f.Flag, f.Flag)
			continue
		case arity == arityNone:
		case hasExplicit:
			f.Values = []ArgWord{vw}
		case arity == arityOne:
			if i+1 >= len(words) || isOption(words[i+1]) {
				bad(w, text, "argument %s: expected one argument: vLLM refuses to start", text)
				continue
			}
			i++
			f.Values = []ArgWord{words[i]}
		case arity == arityOptional:
			if i+1 < len(words) && !isOption(words[i+1]) {
				i++
				f.Values = []ArgWord{words[i]}
			}
		case arity == arityPlus:
			for i+1 < len(words) && !isOption(words[i+1]) && words[i+1].Text != "--" {
				i++
				f.Values = append(f.Values, words[i])
			}
			if len(f.Values) == 0 {
				bad(w, text, "argument %s: expected at least one argument: vLLM refuses to start", text)
				continue
			}
		}
		a.Flags = append(a.Flags, f)
	}
	return a
}

// ConfigPath returns the --config value and its line ("" when absent). The last one wins.
func (a *ServeArgs) ConfigPath() (string, int, bool) {
	p, line, unknown := "", 0, false
	for _, f := range a.Flags {
		if f.Flag == "config" && len(f.Values) == 1 {
			p, line, unknown = f.Values[0].Text, f.Line, f.Values[0].Unknown != ""
		}
	}
	return p, line, unknown
}

// EngineConfig returns the settings the server runs: the config file's (configData, read from
// configName; nil when the command line names none or it is not available), then the command
// line's, which win — vLLM inserts the config file's flags before the command line's and argparse
// keeps the last. positional says whether the first positional word is the model (vllm serve
// MODEL); vLLM then uses it over --model.
func (a *ServeArgs) EngineConfig(configData []byte, configName string, positional bool) *EngineConfig {
	p := newEngineParser(a.Name)
	p.cfg.Problems = append(p.cfg.Problems, a.Problems...)
	last := map[string]int{} // flag → index of the last occurrence, which argparse keeps
	for i, f := range a.Flags {
		if !f.Dotted {
			last[f.Flag] = i
		}
	}
	if positional && len(a.Positional) > 0 {
		last["model"] = -1
	}
	if configData != nil {
		if root := configRoot(configData, configName); root != nil {
			p.src = configName
			for _, kv := range mappingPairs(root) {
				kn := deref(kv[0])
				if kn == nil || kn.Kind != yaml.ScalarNode {
					continue
				}
				ek := classifyEngineKey(kn.Value, false)
				if _, over := last[ek.Flag]; over && ek.Flag != "" && ek.Form != KeyDotted {
					ek.Line, ek.File, ek.Value = kn.Line, configName, nodeText(deref(kv[1]))
					p.cfg.Overrides = append(p.cfg.Overrides, EngineOverride{File: ek})
					continue
				}
				p.pair(kv[0], kv[1])
			}
			p.src = a.Name
		}
	}
	cliKey := map[string]EngineKey{}
	for i, f := range a.Flags {
		if !f.Dotted && last[f.Flag] != i {
			continue
		}
		p.written = f.Written
		if f.Note != "" {
			p.written = f.Written + " (" + f.Note + ")"
		}
		keyName := f.Flag
		if f.Negated {
			keyName = "no-" + f.Flag
		}
		if f.Dotted {
			keyName = f.Flag + ".x"
		}
		kn := &yaml.Node{Kind: yaml.ScalarNode, Value: keyName, Line: f.Line}
		if u := unknownOf(f.Values); u != "" {
			ek := classifyEngineKey(keyName, false)
			ek.Key, ek.Line, ek.File, ek.Value = p.written, f.Line, a.Name, joinWords(f.Values)
			p.cfg.Keys = append(p.cfg.Keys, ek)
			if _, ok := p.cfg.byFlag[ek.Flag]; !ok {
				p.cfg.byFlag[ek.Flag] = ek
			}
			p.cfg.Unresolved = append(p.cfg.Unresolved, EngineUnresolved{Key: ek, Why: u})
			cliKey[f.Flag] = ek
			p.written = ""
			continue
		}
		p.pair(kn, cliValueNode(f))
		if k, ok := p.cfg.byFlag[f.Flag]; ok {
			cliKey[f.Flag] = k
		}
		p.written = ""
	}
	if positional && len(a.Positional) > 0 {
		m := a.Positional[0]
		kn := &yaml.Node{Kind: yaml.ScalarNode, Value: "model", Line: m.Line}
		p.written = "model (positional)"
		if m.Unknown != "" {
			ek := EngineKey{Key: p.written, Flag: "model", Form: KeyLong, Line: m.Line, File: a.Name, Value: m.Text}
			p.cfg.Keys = append(p.cfg.Keys, ek)
			p.cfg.byFlag["model"] = ek
			p.cfg.Unresolved = append(p.cfg.Unresolved, EngineUnresolved{Key: ek, Why: m.Unknown})
		} else {
			// The positional model replaces --model (vllm serve copies model_tag over it).
			delete(p.cfg.byFlag, "model")
			delete(p.seenKey, "model")
			p.pair(kn, &yaml.Node{Kind: yaml.ScalarNode, Style: yaml.DoubleQuotedStyle, Value: m.Text, Line: m.Line})
		}
		cliKey["model"] = p.cfg.byFlag["model"]
		p.written = ""
	}
	for i := range p.cfg.Overrides {
		p.cfg.Overrides[i].Flag = cliKey[p.cfg.Overrides[i].File.Flag]
	}
	return p.cfg
}

func unknownOf(ws []ArgWord) string {
	for _, w := range ws {
		if w.Unknown != "" {
			return w.Unknown
		}
	}
	return ""
}

func joinWords(ws []ArgWord) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.Text
	}
	return strings.Join(parts, " ")
}

// cliValueNode turns a flag's words into the node the engine parser checks: a switch is true, a
// list flag a sequence, anything else a string (argparse hands every value over as a string).
func cliValueNode(f ServeFlag) *yaml.Node {
	str := func(w ArgWord) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Style: yaml.DoubleQuotedStyle, Tag: "!!str", Value: w.Text, Line: w.Line}
	}
	switch {
	case len(f.Values) == 0:
		return &yaml.Node{Kind: yaml.ScalarNode, Value: "true", Tag: "!!bool", Line: f.Line}
	case flagArity(f.Flag, f.Negated) == arityPlus && !f.Dotted:
		seq := &yaml.Node{Kind: yaml.SequenceNode, Line: f.Line}
		for _, w := range f.Values {
			seq.Content = append(seq.Content, str(w))
		}
		return seq
	}
	return str(f.Values[0])
}

// configRoot decodes an engine config's mapping, or nil when it is not one (the engine config's
// own lint reports why).
func configRoot(data []byte, name string) (root *yaml.Node) {
	defer func() {
		if recover() != nil {
			root = nil
		}
	}()
	if len(data) > MaxEngineConfigBytes {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil
	}
	r, err := engineRoot(&doc, name)
	if err != nil {
		return nil
	}
	return r
}
