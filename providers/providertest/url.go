package providertest

import (
	"errors"
	"strings"
	"testing"

	"lifeboat/providers"
)

// URLCase is a store URL ParseURL accepts and the Location it must give.
type URLCase struct {
	In   string
	Want providers.Location
}

// BadURLCase is a store URL ParseURL refuses, and what its error must say.
type BadURLCase struct {
	In, Says string
}

// ParseURLs checks a scheme's grammar through the factory (its package must be linked): every
// good URL parses to its Location and its String parses back to the same Location; every bad one
// is refused with an error that wraps ErrInvalidURL and says what is wrong.
func ParseURLs(t *testing.T, good []URLCase, bad []BadURLCase) {
	t.Helper()
	for _, tc := range good {
		got, err := providers.ParseURL(tc.In)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tc.In, err)
			continue
		}
		if got != tc.Want {
			t.Errorf("ParseURL(%q) = %+v, want %+v", tc.In, got, tc.Want)
		}
		if again, err := providers.ParseURL(got.String()); err != nil || again != got {
			t.Errorf("round trip of %q via %q: %+v, %v", tc.In, got.String(), again, err)
		}
	}
	for _, tc := range bad {
		_, err := providers.ParseURL(tc.In)
		if err == nil {
			t.Errorf("ParseURL(%q) accepted", tc.In)
			continue
		}
		if !errors.Is(err, providers.ErrInvalidURL) {
			t.Errorf("ParseURL(%q): %v does not wrap ErrInvalidURL", tc.In, err)
		}
		if !strings.Contains(err.Error(), tc.Says) {
			t.Errorf("ParseURL(%q) = %q, want it to say %q", tc.In, err, tc.Says)
		}
	}
}
