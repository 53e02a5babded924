package modelrepo

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseAdapterConfigPEFT(t *testing.T) {
	data, err := os.ReadFile("testdata/lora/adapter_config.json")
	if err != nil {
		t.Fatal(err)
	}
	a, err := ParseAdapterConfig(data, "model/loras/sql/adapter_config.json")
	if err != nil {
		t.Fatal(err)
	}
	if a.R != 8 || a.LoRAAlpha != 16 || !reflect.DeepEqual(a.TargetModules, []string{"q_proj", "v_proj"}) ||
		a.BaseModel != "meta-llama/Llama-3.1-8B-Instruct" || a.PEFTType != "LORA" || a.UseDoRA || a.ModulesToSave != nil || a.Missing != nil {
		t.Errorf("parsed %+v", a)
	}
}

func TestParseAdapterConfig(t *testing.T) {
	tests := []struct {
		name  string
		json  string
		fatal bool
		err   string // substring of the error; "" for none
		check func(a *AdapterConfig) bool
	}{
		{"regex targets", `{"r": 16, "lora_alpha": 32.5, "target_modules": "all-linear"}`, false, "",
			func(a *AdapterConfig) bool { return a.TargetModulesRegex == "all-linear" && a.LoRAAlpha == 32.5 }},
		{"dora", `{"r": 8, "lora_alpha": 8, "target_modules": ["q"], "use_dora": true}`, false, "",
			func(a *AdapterConfig) bool { return a.UseDoRA }},
		{"modules_to_save", `{"r": 8, "lora_alpha": 8, "target_modules": ["q"], "modules_to_save": ["lm_head"]}`, false, "",
			func(a *AdapterConfig) bool { return reflect.DeepEqual(a.ModulesToSave, []string{"lm_head"}) }},
		{"empty modules_to_save", `{"r": 8, "lora_alpha": 8, "target_modules": ["q"], "modules_to_save": []}`, false, "",
			func(a *AdapterConfig) bool { return len(a.ModulesToSave) == 0 }},
		{"r as float int", `{"r": 8.0, "lora_alpha": 8, "target_modules": ["q"]}`, false, "",
			func(a *AdapterConfig) bool { return a.R == 8 }},
		{"missing r", `{"lora_alpha": 8, "target_modules": ["q"]}`, false, "field r: missing",
			func(a *AdapterConfig) bool { return reflect.DeepEqual(a.Missing, []string{"r"}) }},
		{"missing all", `{}`, false, "field target_modules: missing",
			func(a *AdapterConfig) bool { return len(a.Missing) == 3 }},
		{"null target", `{"r": 8, "lora_alpha": 8, "target_modules": null}`, false, "target_modules: missing", nil},
		{"r string", `{"r": "8", "lora_alpha": 8, "target_modules": ["q"]}`, false, "field r: want a positive integer, got a string", nil},
		{"r zero", `{"r": 0, "lora_alpha": 8, "target_modules": ["q"]}`, false, "field r: want a positive integer, got 0", nil},
		{"r fraction", `{"r": 2.5, "lora_alpha": 8, "target_modules": ["q"]}`, false, "want a positive integer, got 2.5", nil},
		{"alpha bool", `{"r": 8, "lora_alpha": true, "target_modules": ["q"]}`, false, "field lora_alpha: want a number", nil},
		{"targets number", `{"r": 8, "lora_alpha": 8, "target_modules": 3}`, false, "field target_modules: want a list", nil},
		{"targets item", `{"r": 8, "lora_alpha": 8, "target_modules": ["q", 1]}`, false, "target_modules[1]: want a string", nil},
		{"targets empty", `{"r": 8, "lora_alpha": 8, "target_modules": []}`, false, "empty list", nil},
		{"dora string", `{"r": 8, "lora_alpha": 8, "target_modules": ["q"], "use_dora": "yes"}`, false, "field use_dora: want true or false", nil},
		{"base number", `{"r": 8, "lora_alpha": 8, "target_modules": ["q"], "base_model_name_or_path": 3}`, false, "base_model_name_or_path: want a string", nil},
		{"array", `[1]`, true, "not a JSON object", nil},
		{"null", `null`, true, "not a JSON object", nil},
		{"garbage", `{"r": 8,`, true, "not a JSON object", nil},
		{"trailing", `{"r": 8} {}`, true, "trailing data", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseAdapterConfig([]byte(tt.json), "a.json")
			if tt.fatal {
				if a != nil || err == nil || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "a.json: ") {
					t.Fatalf("got %+v, %v; want fatal %q", a, err, tt.err)
				}
				return
			}
			if a == nil {
				t.Fatalf("no config: %v", err)
			}
			if tt.err == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tt.err != "" {
				var ae *AdapterConfigError
				if !errors.As(err, &ae) || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "a.json: ") {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
			}
			if tt.check != nil && !tt.check(a) {
				t.Errorf("unexpected %+v", a)
			}
		})
	}
}

func TestAllowedMaxLoRARank(t *testing.T) {
	for _, r := range []int{1, 8, 16, 32, 64, 128, 256, 320, 512} {
		if !AllowedMaxLoRARank(r) {
			t.Errorf("%d should be allowed", r)
		}
	}
	for _, r := range []int{0, 2, 4, 12, 24, 48, 1024, -16} {
		if AllowedMaxLoRARank(r) {
			t.Errorf("%d should not be allowed", r)
		}
	}
}
