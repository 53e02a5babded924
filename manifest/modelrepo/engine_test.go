package modelrepo

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseEngineConfigFields(t *testing.T) {
	data, err := os.ReadFile("testdata/engine/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseEngineConfig(data, "engine/engine.yaml")
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	want := EngineConfig{
		Model:            "/models/Llama-3.1-8B-Instruct",
		ServedModelNames: []string{"llama", "llama-3.1"},
		Tokenizer:        "/models/Llama-3.1-8B-Instruct/tokenizer",
		Quantization:     "awq_marlin",
		DType:            "float16",
		MaxModelLen:      32768,
		EnableLoRA:       true,
		MaxLoRARank:      32,
		MaxLoRAs:         4,
		ChatTemplate:     "/models/Llama-3.1-8B-Instruct/chat_template.jinja",
		GenerationConfig: "auto",
		Revision:         "0123456789abcdef0123456789abcdef01234567",
		TrustRemoteCode:  false,
		Port:             8080,
		LoRAModules: []LoRAModule{
			{Name: "sql-lora", Path: "/models/Llama-3.1-8B-Instruct/loras/sql-lora", BaseModelName: "llama", Line: 17, Form: "json"},
			{Name: "chat-lora", Path: "/models/Llama-3.1-8B-Instruct/loras/chat", Line: 18, Form: "name=path"},
		},
	}
	got := *c
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"Model", got.Model, want.Model},
		{"ServedModelNames", got.ServedModelNames, want.ServedModelNames},
		{"Tokenizer", got.Tokenizer, want.Tokenizer},
		{"Quantization", got.Quantization, want.Quantization},
		{"DType", got.DType, want.DType},
		{"MaxModelLen", got.MaxModelLen, want.MaxModelLen},
		{"EnableLoRA", got.EnableLoRA, want.EnableLoRA},
		{"MaxLoRARank", got.MaxLoRARank, want.MaxLoRARank},
		{"MaxLoRAs", got.MaxLoRAs, want.MaxLoRAs},
		{"ChatTemplate", got.ChatTemplate, want.ChatTemplate},
		{"GenerationConfig", got.GenerationConfig, want.GenerationConfig},
		{"Revision", got.Revision, want.Revision},
		{"TrustRemoteCode", got.TrustRemoteCode, want.TrustRemoteCode},
		{"Port", got.Port, want.Port},
		{"LoRAModules", got.LoRAModules, want.LoRAModules},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Errorf("%s = %#v, want %#v", f.name, f.got, f.want)
		}
	}
	if n := c.Line("max-model-len"); n != 6 {
		t.Errorf("Line(max-model-len) = %d, want 6", n)
	}
	if !c.Has("enable-prefix-caching") || c.Has("enforce-eager") {
		t.Errorf("Has: enable-prefix-caching %v, enforce-eager %v", c.Has("enable-prefix-caching"), c.Has("enforce-eager"))
	}
	if len(c.Unknown) != 0 {
		t.Errorf("Unknown = %+v", c.Unknown)
	}
	if v, ok := c.HFOverrides["rope_theta"]; !ok || v.(interface{ String() string }).String() != "500000" {
		t.Errorf("HFOverrides = %#v", c.HFOverrides)
	}
	if len(c.Keys) != 20 {
		t.Errorf("len(Keys) = %d, want 20", len(c.Keys))
	}
}

func TestParseEngineConfigDefaults(t *testing.T) {
	c, err := ParseEngineConfig([]byte("model: /models/x\n"), "e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxLoRARank != 16 || c.MaxLoRAs != 1 || c.Port != 8000 || c.MaxModelLen != 0 || c.EnableLoRA {
		t.Errorf("defaults: %+v", c)
	}
}

func TestParseEngineConfigProblems(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		kind ProblemKind
		want string // substring of the formatted problem
	}{
		{"int", "model: m\nmax-model-len: abc\n", ProblemType, `e.yaml:2: max-model-len: want an integer`},
		{"float for int", "tensor-parallel-size: 2.0\n", ProblemType, `e.yaml:1: tensor-parallel-size: want an integer, got a number (2.0)`},
		{"bool for int", "port: true\n", ProblemType, `port: want a value, got a boolean`},
		{"port range", "port: 70000\n", ProblemType, `port 70000 is out of range`},
		{"string for bool", "enable-lora: \"true\"\n", ProblemType, `enable-lora: want true or false, got "true"`},
		{"null for bool", "enable-lora:\n", ProblemType, `want true or false, got null`},
		{"list for str", "model:\n  - a\n  - b\n", ProblemType, `model: want a single value, got a list`},
		{"map for list", "served-model-name: {a: b}\n", ProblemType, `want a string or a list of strings, got a mapping`},
		{"bool for list", "served-model-name: true\n", ProblemType, `served-model-name: want a string or a list of strings, got a boolean`},
		{"list for json", "hf-overrides: [1]\n", ProblemType, `want a mapping`},
		{"bad json string", "hf-overrides: '{x'\n", ProblemType, `want a mapping or a JSON object string`},
		{"binary decimal", "max-model-len: 1.5K\n", ProblemType, `decimals are not allowed with binary suffix K`},
		{"negative len", "max-model-len: -5\n", ProblemType, `want a positive length`},
		{"float for float ok, string bad", "gpu-memory-utilization: lots\n", ProblemType, `want a number`},
		{"underscore", "max_model_len: 4096\n", ProblemUnderscore, `e.yaml:1: max_model_len: use the flag's long name "max-model-len"`},
		{"short", "tp: 2\n", ProblemKeyForm, `"tp" is a command-line short option (-tp); in the config file write the long name "tensor-parallel-size"`},
		{"dashes", "--port: 8000\n", ProblemKeyForm, `write the flag without leading dashes ("port")`},
		{"int key", "1: x\n", ProblemKeyForm, `a key must be a flag name, got an integer (1)`},
		{"bool key", "yes: x\n", ProblemKeyForm, `a key must be a flag name, got a boolean (yes)`},
		{"duplicate", "port: 1\nport: 2\n", ProblemDuplicate, `e.yaml:2: port: set again (first set on line 1)`},
		{"duplicate spellings", "max-model-len: 1\nmax_model_len: 2\n", ProblemDuplicate, `e.yaml:2: max_model_len: set again (first set on line 1)`},
		{"lora yaml map", "lora-modules:\n  - {name: a, path: /p}\n", ProblemLoRAModule, `e.yaml:2: lora-modules[0]: a YAML mapping is passed to vLLM as Python's str()`},
		{"lora two equals", "lora-modules:\n  - a=b=c\n", ProblemLoRAModule, `more than one "="`},
		{"lora bad json", "lora-modules:\n  - '{\"name\": \"a\"'\n", ProblemLoRAModule, `neither "name=path" nor a JSON object`},
		{"lora extra field", "lora-modules:\n  - '{\"name\": \"a\", \"path\": \"/p\", \"rank\": 8}'\n", ProblemLoRAModule, `unknown field(s) rank`},
		{"lora missing path", "lora-modules:\n  - '{\"name\": \"a\", \"base_model_name\": null}'\n", ProblemLoRAModule, `field path is missing`},
		{"lora mapping", "lora-modules:\n  a: /p\n", ProblemLoRAModule, `want a list of adapters`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseEngineConfig([]byte(tt.yaml), "e.yaml")
			if c == nil {
				t.Fatalf("no config; err = %v", err)
			}
			var ece *EngineConfigError
			if !errors.As(err, &ece) {
				t.Fatalf("err = %v, want *EngineConfigError", err)
			}
			for _, p := range c.Problems {
				if p.Kind == tt.kind && strings.Contains(p.Format("e.yaml"), tt.want) {
					return
				}
			}
			t.Errorf("no %s problem containing %q in:\n%v", tt.kind, tt.want, err)
		})
	}
}

func TestParseEngineConfigFatal(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"empty", "", "e.yaml: empty document"},
		{"comment only", "# nothing\n", "e.yaml: empty document"},
		{"list", "- a\n- b\n", "e.yaml:1: want a mapping of vLLM flag names to values, got a list"},
		{"scalar", "hello\n", `e.yaml:1: want a mapping of vLLM flag names to values, got "hello"`},
		{"syntax", "model: a\n  bad: [\n", "e.yaml:"},
		{"two docs", "model: a\n---\nport: 1\n", "e.yaml:2: a second YAML document"},
		{"tab indent", "model: a\n\tport: 1\n", "e.yaml:2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseEngineConfig([]byte(tt.yaml), "e.yaml")
			if err == nil || c != nil {
				t.Fatalf("got config %v, err %v; want a fatal error", c, err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %q, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestParseEngineConfigKeys(t *testing.T) {
	yaml := `max-model-length: 4096
no-enable-prefix-caching: true
compilation-config.level: 3
rope-scaling: {}
enable_lora: yes
speling-mistake: 1
`
	c, err := ParseEngineConfig([]byte(yaml), "e.yaml")
	var ece *EngineConfigError
	if !errors.As(err, &ece) || len(ece.Problems) != 1 || ece.Problems[0].Kind != ProblemUnderscore {
		t.Fatalf("err = %v", err)
	}
	forms := map[string]KeyForm{}
	notes := map[string]string{}
	for _, k := range c.Keys {
		forms[k.Key] = k.Form
		notes[k.Key] = k.Note
	}
	want := map[string]KeyForm{
		"max-model-length": KeyUnknown, "no-enable-prefix-caching": KeyNegated,
		"compilation-config.level": KeyDotted, "rope-scaling": KeyLegacy,
		"enable_lora": KeyUnderscore, "speling-mistake": KeyUnknown,
	}
	if !reflect.DeepEqual(forms, want) {
		t.Errorf("forms = %v, want %v", forms, want)
	}
	if notes["max-model-length"] != `did you mean "max-model-len"?` {
		t.Errorf("suggestion = %q", notes["max-model-length"])
	}
	if !strings.Contains(notes["rope-scaling"], "hf-overrides") {
		t.Errorf("legacy note = %q", notes["rope-scaling"])
	}
	if len(c.Unknown) != 3 {
		t.Errorf("Unknown = %+v", c.Unknown)
	}
	if !c.EnableLoRA {
		t.Error("enable_lora: yes (YAML 1.1 boolean) not applied")
	}
}

func TestParseEngineConfigValues(t *testing.T) {
	tests := []struct {
		yaml  string
		check func(c *EngineConfig) bool
	}{
		{"max-model-len: 32k\n", func(c *EngineConfig) bool { return c.MaxModelLen == 32000 }},
		{"max-model-len: 32K\n", func(c *EngineConfig) bool { return c.MaxModelLen == 32768 }},
		{"max-model-len: 25.6k\n", func(c *EngineConfig) bool { return c.MaxModelLen == 25600 }},
		{"max-model-len: 1M\n", func(c *EngineConfig) bool { return c.MaxModelLen == 1<<20 }},
		{"max-model-len: '8192'\n", func(c *EngineConfig) bool { return c.MaxModelLen == 8192 }},
		{"max-model-len: auto\n", func(c *EngineConfig) bool { return c.MaxModelLenAuto && c.MaxModelLen == 0 }},
		{"max-model-len: -1\n", func(c *EngineConfig) bool { return c.MaxModelLenAuto }},
		{"max-model-len: 1_000\n", func(c *EngineConfig) bool { return c.MaxModelLen == 1000 }},
		{"max-model-len:\n", func(c *EngineConfig) bool { return c.MaxModelLen == 0 && c.Has("max-model-len") }},
		{"served-model-name: llama\n", func(c *EngineConfig) bool { return reflect.DeepEqual(c.ServedModelNames, []string{"llama"}) }},
		{"served-model-name: [a, 7]\n", func(c *EngineConfig) bool { return reflect.DeepEqual(c.ServedModelNames, []string{"a", "7"}) }},
		{"enable-lora: on\n", func(c *EngineConfig) bool { return c.EnableLoRA }},
		{"enable-lora: true\nno-enable-lora: true\n", func(c *EngineConfig) bool { return len(c.Problems) == 1 }}, // duplicate
		{"no-enable-lora: true\n", func(c *EngineConfig) bool { return !c.EnableLoRA && c.Has("enable-lora") }},
		{"lora-modules: a=/p\n", func(c *EngineConfig) bool { return len(c.LoRAModules) == 1 && c.LoRAModules[0].Path == "/p" }},
		{"lora-modules: []\n", func(c *EngineConfig) bool { return len(c.LoRAModules) == 0 }},
		{"lora-modules: ['', 'a=/p']\n", func(c *EngineConfig) bool { return len(c.LoRAModules) == 1 }},
		{"hf-overrides: '{\"max_position_embeddings\": 4096}'\n", func(c *EngineConfig) bool { return c.HFOverrides["max_position_embeddings"] != nil }},
		{"base: &b\n  model: /m\n", func(c *EngineConfig) bool { return len(c.Unknown) == 1 }},
		{"x: &p 4096\nmax-model-len: *p\n", func(c *EngineConfig) bool { return c.MaxModelLen == 4096 }},
		{"<<: {model: /m, port: 1}\nport: 2\n", func(c *EngineConfig) bool { return c.Model == "/m" && c.Port == 2 && len(c.Problems) == 0 }},
		{"revision: 1234\n", func(c *EngineConfig) bool { return c.Revision == "1234" }},
		{"tokenizer: ~\n", func(c *EngineConfig) bool { return c.Tokenizer == "" && len(c.Problems) == 0 }},
		{"max-lora-rank: '64'\n", func(c *EngineConfig) bool { return c.MaxLoRARank == 64 }},
		{"max-lora-rank: 0x10\n", func(c *EngineConfig) bool { return c.MaxLoRARank == 16 }},
	}
	for _, tt := range tests {
		c, _ := ParseEngineConfig([]byte(tt.yaml), "e.yaml")
		if c == nil || !tt.check(c) {
			t.Errorf("%q: unexpected result %+v", tt.yaml, c)
		}
	}
}

func TestParseHumanInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"4096", 4096, true}, {" 4096 ", 4096, true}, {"1k", 1000, true}, {"1K", 1024, true},
		{"25.6k", 25600, true}, {"2M", 2 << 20, true}, {"2m", 2000000, true}, {"1g", 1e9, true},
		{"1t", 1e12, true}, {"1T", 1 << 40, true}, {"1.5K", 0, false}, {"abc", 0, false},
		{"1kb", 0, false}, {"", 0, false}, {"99999999999999999999", 0, false}, {"9999999T", 0, false},
		{"+12", 12, true}, {"1__0", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseHumanInt(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseHumanInt(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseLoRAModule(t *testing.T) {
	tests := []struct {
		in   string
		want LoRAModule
		err  string
	}{
		{"sql=/models/x/sql", LoRAModule{Name: "sql", Path: "/models/x/sql", Form: "name=path"}, ""},
		{`{"name": "sql", "path": "/p", "base_model_name": "llama"}`, LoRAModule{Name: "sql", Path: "/p", BaseModelName: "llama", Form: "json"}, ""},
		{`{"name": "sql", "path": "/p=1"}`, LoRAModule{Name: "sql", Path: "/p=1", Form: "json"}, ""},
		{"=p", LoRAModule{}, "needs both"},
		{`{"name": 1, "path": "/p"}`, LoRAModule{}, "field name: want a string"},
		{`["a"]`, LoRAModule{}, "neither"},
		{`{"name": "a", "path": "/p"} x`, LoRAModule{}, "trailing data"},
		{"sql", LoRAModule{}, "neither"},
	}
	for _, tt := range tests {
		got, err := ParseLoRAModule(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseLoRAModule(%q) err = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseLoRAModule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestEngineFlagTables(t *testing.T) {
	if len(engineFlags) < 200 {
		t.Errorf("only %d known flags", len(engineFlags))
	}
	for short, long := range engineShortFlags {
		if _, ok := engineFlags[long]; !ok {
			t.Errorf("short -%s maps to unknown flag %q", short, long)
		}
	}
	for k := range engineLegacyFlags {
		if _, ok := engineFlags[k]; ok {
			t.Errorf("%q is both current and legacy", k)
		}
	}
	for k := range engineFlags {
		if k != strings.ToLower(k) || strings.ContainsAny(k, "_ .") || strings.HasPrefix(k, "-") {
			t.Errorf("flag %q is not a long flag name", k)
		}
	}
	for _, need := range []string{"model", "served-model-name", "tokenizer", "quantization", "dtype", "kv-cache-dtype",
		"max-model-len", "tensor-parallel-size", "gpu-memory-utilization", "enable-prefix-caching", "enable-lora",
		"max-loras", "max-lora-rank", "max-cpu-loras", "lora-modules", "chat-template", "generation-config",
		"trust-remote-code", "hf-overrides", "revision", "port"} {
		if !KnownEngineFlag(need) {
			t.Errorf("reference flag %q missing", need)
		}
	}
	for m, q := range EngineQuantMethods {
		if !q.Online && len(q.ModelMethods) == 0 {
			t.Errorf("quantization %q accepts no checkpoint and is not online", m)
		}
	}
}

func TestEngineKeyAbbreviation(t *testing.T) {
	c, _ := ParseEngineConfig([]byte("max-num-seq: 3\n"), "e.yaml")
	if len(c.Unknown) != 1 || !strings.Contains(c.Unknown[0].Note, `abbreviation of "max-num-seqs"`) {
		t.Errorf("Unknown = %+v", c.Unknown)
	}
}
