package modelrepo

import (
	"slices"
	"testing"
)

func TestAutoMap(t *testing.T) {
	refs := AutoMapRefs(map[string]any{
		"AutoConfig":    "configuration_foo.FooConfig",
		"AutoTokenizer": []any{"tokenization_foo.FooTokenizer", nil},
		"AutoModel":     "org/other--modeling_foo.FooModel",
		"Bogus":         42.0,
	})
	if want := []string{"configuration_foo.FooConfig", "org/other--modeling_foo.FooModel", "tokenization_foo.FooTokenizer"}; !slices.Equal(refs, want) {
		t.Errorf("AutoMapRefs = %q, want %q", refs, want)
	}
	for _, c := range []struct {
		ref, mod string
		other    bool
	}{
		{"modeling_foo.FooModel", "modeling_foo", false},
		{"pkg.modeling_foo.FooModel", "pkg/modeling_foo", false},
		{"org/other--modeling_foo.FooModel", "modeling_foo", true},
		{"NoModule", "", false},
		{".Leading", "", false},
	} {
		if mod, other := AutoMapModule(c.ref); mod != c.mod || other != c.other {
			t.Errorf("AutoMapModule(%q) = %q, %v; want %q, %v", c.ref, mod, other, c.mod, c.other)
		}
	}
}
