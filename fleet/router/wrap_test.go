package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// The optional capabilities Wrap must keep, one bit each.
const (
	capConditional = 1 << iota
	capZeroDrain
	capNoting
	capAll = capConditional | capZeroDrain | capNoting
)

func capsOf(d Driver) int {
	c := 0
	if _, ok := d.(ConditionalDriver); ok {
		c |= capConditional
	}
	if _, ok := d.(ZeroDrainDriver); ok {
		c |= capZeroDrain
	}
	if _, ok := d.(NotingDriver); ok {
		c |= capNoting
	}
	return c
}

// fake is a driver whose every answer says it came from the fake.
type fake struct{ applies int }

func (f *fake) Read(context.Context) (RouterState, error) {
	return RouterState{Weights: Weights{"g": {"a": 1}}}, nil
}
func (f *fake) Apply(context.Context, RouterState) error { f.applies++; return nil }
func (f *fake) MaxWeight() int                           { return 7 }
func (f *fake) String() string                           { return "fake" }

type fakeCond struct{ f *fake }

func (c fakeCond) ReadVersion(ctx context.Context) (RouterState, RouterVersion, error) {
	rs, _ := c.f.Read(ctx)
	return rs, RouterVersion{"g": "own-etag"}, nil
}
func (c fakeCond) ApplyIf(ctx context.Context, d RouterState, since RouterVersion, fence func() error) error {
	if since["g"] != "own-etag" {
		return ErrRouterConflict
	}
	return c.f.Apply(ctx, d)
}

type fakeZero struct{}

func (fakeZero) ZeroWeightIsDrain() bool { return true }

type fakeNotes struct{}

func (fakeNotes) Notes() []string { return []string{"route g: Accepted"} }

// fakeWith is a fake driver with exactly the capabilities of caps.
func fakeWith(caps int) (Driver, *fake) {
	f := &fake{}
	c, z, n := fakeCond{f}, fakeZero{}, fakeNotes{}
	switch caps {
	case 0:
		return f, f
	case capConditional:
		return struct {
			*fake
			fakeCond
		}{f, c}, f
	case capZeroDrain:
		return struct {
			*fake
			fakeZero
		}{f, z}, f
	case capNoting:
		return struct {
			*fake
			fakeNotes
		}{f, n}, f
	case capConditional | capZeroDrain:
		return struct {
			*fake
			fakeCond
			fakeZero
		}{f, c, z}, f
	case capConditional | capNoting:
		return struct {
			*fake
			fakeCond
			fakeNotes
		}{f, c, n}, f
	case capZeroDrain | capNoting:
		return struct {
			*fake
			fakeZero
			fakeNotes
		}{f, z, n}, f
	}
	return struct {
		*fake
		fakeCond
		fakeZero
		fakeNotes
	}{f, c, z, n}, f
}

// For every combination of capabilities, the wrapped driver has exactly the inner driver's
// (wrapped once and twice, as a drill does), forwards each to the inner driver, and applies the
// wrapper's overrides to the calls that reach the router.
func TestWrapKeepsExactlyTheCapabilities(t *testing.T) {
	ctx := context.Background()
	for caps := 0; caps <= capAll; caps++ {
		t.Run(fmt.Sprintf("caps=%03b", caps), func(t *testing.T) {
			inner, f := fakeWith(caps)
			if got := capsOf(inner); got != caps {
				t.Fatalf("the fake has %03b, want %03b", got, caps)
			}
			var down bool
			befores, afters := 0, 0
			o := Overrides{
				Before: func() error {
					befores++
					if down {
						return ErrRouterUnreachable
					}
					return nil
				},
				After: func() { afters++ },
			}
			once := Wrap(inner, o)
			twice := Wrap(once, Overrides{})
			for _, d := range []Driver{once, twice} {
				if got := capsOf(d); got != caps {
					t.Errorf("wrapped: capabilities %03b, want the inner driver's %03b", got, caps)
				}
				if d.MaxWeight() != 7 || d.String() != "fake" {
					t.Errorf("MaxWeight %d, String %q: not the inner driver's", d.MaxWeight(), d.String())
				}
				if got := ZeroWeightIsDrain(d); got != (caps&capZeroDrain != 0) {
					t.Errorf("ZeroWeightIsDrain %v through the wrapper", got)
				}
				if n, ok := d.(NotingDriver); ok && !slices.Equal(n.Notes(), []string{"route g: Accepted"}) {
					t.Errorf("Notes %q: not the inner driver's", n.Notes())
				}
				_, v, err := ReadVersion(ctx, d)
				if err != nil {
					t.Fatal(err)
				}
				if own := caps&capConditional != 0; own != (v["g"] == "own-etag") {
					t.Errorf("version %q: the inner driver's own compare-and-swap kept %v, want %v", v["g"], !own, own)
				}
				if err := ApplyIf(ctx, d, RouterState{Weights: Weights{"g": {"a": 1}}}, v, nil); err != nil {
					t.Errorf("ApplyIf since the version read: %v", err)
				}
				if err := ApplyIf(ctx, d, RouterState{Weights: Weights{"g": {"a": 2}}}, RouterVersion{"g": "stale"}, nil); !errors.Is(err, ErrRouterConflict) {
					t.Errorf("ApplyIf since a stale version: %v, want ErrRouterConflict", err)
				}
			}
			if befores == 0 || afters != 2 || f.applies != 2 {
				t.Errorf("overrides: %d befores, %d afters, %d applies; want some, 2, 2", befores, afters, f.applies)
			}
			down = true
			if _, err := twice.Read(ctx); !errors.Is(err, ErrRouterUnreachable) {
				t.Errorf("Read with Before failing: %v", err)
			}
			if err := twice.Apply(ctx, RouterState{}); !errors.Is(err, ErrRouterUnreachable) || f.applies != 2 {
				t.Errorf("Apply with Before failing: %v (%d applies)", err, f.applies)
			}
			if u, ok := twice.(interface{ Unwrap() Driver }); !ok || u.Unwrap() != once {
				t.Error("Unwrap is not the wrapped driver")
			}
		})
	}
}
