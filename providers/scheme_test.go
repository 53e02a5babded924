package providers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// file:// is registered by this package itself, so that code linking only providers can open
// local directories; a scheme is registered once, with a name and an Open.
func TestRegister(t *testing.T) {
	if !slices.Contains(Schemes(), "file") {
		t.Fatalf("schemes %q: want file registered by providers itself", Schemes())
	}
	s, err := Open(context.Background(), "file://"+t.TempDir(), Options{})
	if err != nil {
		t.Fatalf("open file://: %v", err)
	}
	s.Close()
	open := func(context.Context, Location, Options) (Store, error) { return nil, nil }
	for name, sch := range map[string]Scheme{
		"repeated": {Name: "file", Open: open},
		"no name":  {Open: open},
		"no open":  {Name: "x-test"},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("Register did not panic")
				}
			}()
			Register(sch)
		})
	}
}

// A well-formed URL of a scheme whose package the program does not link is a configuration
// error that says what to import.
func TestNotLinked(t *testing.T) {
	err := errNotLinked("s3")
	if !errors.Is(err, ErrMisconfigured) || !strings.Contains(err.Error(), "s3://") || !strings.Contains(err.Error(), "lifeboat/providers") {
		t.Fatalf("error %v: want ErrMisconfigured naming s3:// and the package to import", err)
	}
}
