package execlauncher

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Vars are the fields a command template can use.
type Vars struct {
	ModelDir, EngineConfig, Host string
	Port                         int
}

// CommandArgs renders the command template into argv (exported so a CLI can validate a template
// up front and show what it would run).
func (l *Launcher) CommandArgs(v Vars) ([]string, error) {
	words, err := splitWords(l.Command)
	if err != nil {
		return nil, fmt.Errorf("exec launcher: command %q: %w", l.Command, err)
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("exec launcher: empty command")
	}
	argv := make([]string, 0, len(words))
	for _, w := range words {
		a, err := substitute(w, v)
		if err != nil {
			return nil, fmt.Errorf("exec launcher: command %q: %w", l.Command, err)
		}
		argv = append(argv, a)
	}
	return argv, nil
}

// substitute replaces each {{.Field}} of one word with the field's value: plain substitution,
// not a template language, so a command line can neither loop nor format (a fleet file is
// input, and {{range}} or printf in it once hung the parser and took gigabytes).
func substitute(w string, v Vars) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(w, "{{")
		if i < 0 {
			b.WriteString(w)
			return b.String(), nil
		}
		b.WriteString(w[:i])
		end := strings.Index(w[i+2:], "}}")
		if end < 0 {
			return "", errors.New("unterminated {{")
		}
		field := strings.TrimSpace(w[i+2 : i+2+end])
		switch field {
		case ".ModelDir":
			b.WriteString(v.ModelDir)
		case ".EngineConfig":
			b.WriteString(v.EngineConfig)
		case ".Host":
			b.WriteString(v.Host)
		case ".Port":
			b.WriteString(strconv.Itoa(v.Port))
		default:
			return "", fmt.Errorf("{{%s}}: only plain field substitution is allowed ({{.ModelDir}}, {{.EngineConfig}}, {{.Host}}, {{.Port}})", w[i+2:i+2+end])
		}
		w = w[i+2+end+2:]
	}
}

// splitWords splits a command line like a POSIX shell does for quoting only: whitespace separates
// words; '…' is literal; "…" allows \" \\ \$ \` escapes; a backslash outside quotes escapes the next
// character. Template actions {{ … }} are kept whole (they may contain spaces and quotes).
func splitWords(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case strings.HasPrefix(s[i:], "{{"):
			end := strings.Index(s[i+2:], "}}")
			if end < 0 {
				return nil, errors.New("unterminated {{")
			}
			cur.WriteString(s[i : i+2+end+2])
			i += 2 + end + 1
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				} else if strings.HasPrefix(s[i:], "{{") {
					end := strings.Index(s[i+2:], "}}")
					if end < 0 {
						return nil, errors.New("unterminated {{")
					}
					cur.WriteString(s[i : i+2+end+2])
					i += 2 + end + 1
					continue
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unterminated double quote")
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
