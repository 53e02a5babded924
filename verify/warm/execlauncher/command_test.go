package execlauncher

import (
	"fmt"
	"testing"
)

func TestSplitWords(t *testing.T) {
	for in, want := range map[string][]string{
		`vllm serve {{.ModelDir}} --port {{.Port}}`:          {"vllm", "serve", "{{.ModelDir}}", "--port", "{{.Port}}"},
		`a 'b c' "d \"e\" $f" g\ h`:                          {"a", "b c", `d "e" $f`, "g h"},
		`x {{ .ModelDir }} "--flag={{ printf "%s" .Host }}"`: {"x", "{{ .ModelDir }}", `--flag={{ printf "%s" .Host }}`},
		`  `: nil,
	} {
		got, err := splitWords(in)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`a 'b`, `a "b`, `a\`, `{{ .X`} {
		if _, err := splitWords(bad); err == nil {
			t.Errorf("splitWords(%q): no error", bad)
		}
	}
	l := &Launcher{Command: `serve {{.ModelDir}} --config={{.EngineConfig}} --port {{.Port}}`}
	argv, err := l.CommandArgs(Vars{ModelDir: "/m/with space", EngineConfig: "/e.yaml", Port: 9})
	if err != nil || fmt.Sprint(argv) != fmt.Sprint([]string{"serve", "/m/with space", "--config=/e.yaml", "--port", "9"}) {
		t.Errorf("%q %v", argv, err)
	}
	if _, err := (&Launcher{Command: `x {{.Nope}}`}).CommandArgs(Vars{}); err == nil {
		t.Error("unknown template field accepted")
	}
}
