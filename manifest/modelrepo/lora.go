package modelrepo

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// AllowedMaxLoRARanks are the values vLLM accepts for max-lora-rank (LoRAConfig.max_lora_rank).
var AllowedMaxLoRARanks = []int{1, 8, 16, 32, 64, 128, 256, 320, 512}

// AllowedMaxLoRARank reports whether r is one of AllowedMaxLoRARanks.
func AllowedMaxLoRARank(r int) bool {
	for _, a := range AllowedMaxLoRARanks {
		if a == r {
			return true
		}
	}
	return false
}

// AdapterConfig is a PEFT adapter_config.json.
type AdapterConfig struct {
	Raw map[string]any

	PEFTType  string // "LORA" for LoRA adapters; "" when absent
	BaseModel string // base_model_name_or_path; "" when absent or null

	R                  int     // 0 when absent
	LoRAAlpha          float64 // 0 when absent
	TargetModules      []string
	TargetModulesRegex string // target_modules given as a string (a regex, or "all-linear")
	UseDoRA            bool
	ModulesToSave      []string // non-empty means vLLM refuses the adapter

	Missing []string // required fields (r, lora_alpha, target_modules) absent or null
}

// AdapterConfigError lists what is wrong with an adapter config that is a JSON object.
type AdapterConfigError struct {
	Name     string
	Problems []string // "field r: want a positive integer, got a string"
}

func (e *AdapterConfigError) Error() string {
	return e.Name + ": " + strings.Join(e.Problems, "; ")
}

// ParseAdapterConfig parses a PEFT adapter_config.json. A document that is not a JSON object gives
// an error and no config. For an object, wrongly typed fields and missing required fields (r,
// lora_alpha, target_modules — vLLM's PEFTHelper needs all three) give an *AdapterConfigError
// together with the config, in which those fields are left zero.
func ParseAdapterConfig(data []byte, name string) (*AdapterConfig, error) {
	raw, err := decodeObject(data, name)
	if err != nil {
		return nil, err
	}
	a := &AdapterConfig{Raw: raw}
	var probs []string
	bad := func(field, format string, args ...any) {
		probs = append(probs, "field "+field+": "+fmt.Sprintf(format, args...))
	}
	str := func(field string) string {
		v, ok := raw[field]
		if !ok || v == nil {
			return ""
		}
		s, ok := v.(string)
		if !ok {
			bad(field, "want a string, got %s", typeName(v))
		}
		return s
	}
	a.PEFTType = str("peft_type")
	a.BaseModel = str("base_model_name_or_path")

	if v, ok := raw["r"]; !ok || v == nil {
		a.Missing = append(a.Missing, "r")
	} else if n, isNum := v.(json.Number); !isNum {
		bad("r", "want a positive integer, got %s", typeName(v))
	} else if f, err := n.Float64(); err != nil || f != math.Trunc(f) || f < 1 || f > math.MaxInt32 {
		bad("r", "want a positive integer, got %s", n)
	} else {
		a.R = int(f)
	}

	if v, ok := raw["lora_alpha"]; !ok || v == nil {
		a.Missing = append(a.Missing, "lora_alpha")
	} else if n, isNum := v.(json.Number); !isNum {
		bad("lora_alpha", "want a number, got %s", typeName(v))
	} else if f, err := n.Float64(); err != nil || math.IsInf(f, 0) {
		bad("lora_alpha", "want a number, got %s", n)
	} else {
		a.LoRAAlpha = f
	}

	switch v := raw["target_modules"].(type) {
	case nil:
		a.Missing = append(a.Missing, "target_modules")
	case string:
		if v == "" {
			bad("target_modules", "empty string")
		}
		a.TargetModulesRegex = v
	case []any:
		if len(v) == 0 {
			bad("target_modules", "empty list: the adapter adapts nothing")
		}
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				bad(fmt.Sprintf("target_modules[%d]", i), "want a string, got %s", typeName(e))
				continue
			}
			a.TargetModules = append(a.TargetModules, s)
		}
	default:
		bad("target_modules", "want a list of module names or a regex string, got %s", typeName(v))
	}

	switch v := raw["use_dora"].(type) {
	case nil:
	case bool:
		a.UseDoRA = v
	default:
		bad("use_dora", "want true or false, got %s", typeName(v))
	}

	switch v := raw["modules_to_save"].(type) {
	case nil:
	case string:
		if v != "" {
			a.ModulesToSave = []string{v}
		}
	case []any:
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				bad(fmt.Sprintf("modules_to_save[%d]", i), "want a string, got %s", typeName(e))
				continue
			}
			a.ModulesToSave = append(a.ModulesToSave, s)
		}
	default:
		bad("modules_to_save", "want null or a list of module names, got %s", typeName(v))
	}

	for _, f := range a.Missing {
		probs = append(probs, "field "+f+": missing (vLLM needs r, lora_alpha and target_modules)")
	}
	if len(probs) > 0 {
		return a, &AdapterConfigError{Name: name, Problems: probs}
	}
	return a, nil
}
