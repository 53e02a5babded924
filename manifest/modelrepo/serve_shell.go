package modelrepo

import (
	"strings"
)

// A small reader of the `sh -c` one-liners containers start vLLM with: words, quotes, escapes,
// $VAR / ${VAR} / ${VAR:-default} from the container's environment, and the operators that
// separate commands. It does not run anything: command substitutions and positional parameters
// make a word unknown.

// maxShellWords bounds the words read from one script.
const maxShellWords = 4096

// shellCommands splits a script into simple commands of words.
func shellCommands(script ArgWord, env ContainerEnv) [][]ArgWord {
	s := script.Text
	var (
		cmds    [][]ArgWord
		cur     []ArgWord
		b       strings.Builder
		inWord  bool
		start   int
		unknown string
		total   int
	)
	endWord := func() {
		if inWord && total < maxShellWords {
			cur = append(cur, ArgWord{Text: b.String(), Line: script.lineAt(start), Unknown: unknown})
			total++
		}
		b.Reset()
		inWord, unknown = false, ""
	}
	endCmd := func() {
		endWord()
		if len(cur) > 0 {
			cmds = append(cmds, cur)
			cur = nil
		}
	}
	begin := func(i int) {
		if !inWord {
			inWord, start = true, i
		}
	}
	setUnknown := func(why string) {
		if unknown == "" && why != "" {
			unknown = why
		}
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++ // line continuation
		case ch == ' ' || ch == '\t' || ch == '\r':
			endWord()
		case ch == '\n' || ch == ';' || ch == '&' || ch == '|' || ch == '(' || ch == ')':
			endCmd()
		case ch == '#' && !inWord:
			for i < len(s) && s[i] != '\n' {
				i++
			}
			endCmd()
		case ch == '\'':
			begin(i)
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				b.WriteString(s[i+1:])
				i = len(s)
				break
			}
			b.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case ch == '"':
			begin(i)
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				switch {
				case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0:
					if s[i+1] != '\n' {
						b.WriteByte(s[i+1])
					}
					i++
				case s[i] == '$':
					v, why, n := shellExpand(s[i:], env)
					b.WriteString(v)
					setUnknown(why)
					i += n - 1
				case s[i] == '`':
					setUnknown("a command substitution (`…`)")
					if end := strings.IndexByte(s[i+1:], '`'); end >= 0 {
						i += end + 1
					}
				default:
					b.WriteByte(s[i])
				}
			}
		case ch == '\\':
			begin(i)
			if i+1 < len(s) {
				b.WriteByte(s[i+1])
				i++
			}
		case ch == '$':
			begin(i)
			v, why, n := shellExpand(s[i:], env)
			b.WriteString(v)
			setUnknown(why)
			i += n - 1
		case ch == '`':
			begin(i)
			setUnknown("a command substitution (`…`)")
			if end := strings.IndexByte(s[i+1:], '`'); end >= 0 {
				i += end + 1
			} else {
				i = len(s)
			}
		default:
			begin(i)
			b.WriteByte(ch)
		}
	}
	endCmd()
	return cmds
}

// shellExpand expands the parameter at the start of s ("$…"); n is how many bytes it used.
func shellExpand(s string, env ContainerEnv) (val, unknown string, n int) {
	if len(s) < 2 {
		return "$", "", 1
	}
	switch c := s[1]; {
	case c == '{':
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return s, "an unterminated ${", len(s)
		}
		body := s[2:end]
		name, def, hasDef := body, "", false
		for _, op := range []string{":-", "-", ":=", "="} {
			if k := strings.Index(body, op); k > 0 {
				name, def, hasDef = body[:k], body[k+len(op):], true
				break
			}
		}
		if !validShellName(name) {
			return "", "${" + body + "}", end + 1
		}
		v, why := env.shellVar(name)
		if why != "" && hasDef {
			if _, set := env.Vars[name]; !set && len(env.EnvFrom) == 0 {
				return def, "", end + 1 // unset: the default applies
			}
		}
		return v, why, end + 1
	case c == '(':
		depth, i := 0, 1
		for ; i < len(s); i++ {
			if s[i] == '(' {
				depth++
			} else if s[i] == ')' {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		return "", "a command substitution $(…)", min(i+1, len(s))
	case c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
		i := 1
		for i < len(s) && (s[i] == '_' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= '0' && s[i] <= '9') {
			i++
		}
		v, why := env.shellVar(s[1:i])
		return v, why, i
	case c >= '0' && c <= '9' || strings.IndexByte("@*#?-$!", c) >= 0:
		return "", "the shell parameter $" + string(c), 2
	}
	return "$", "", 1
}

func validShellName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
