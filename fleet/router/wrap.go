package router

import "context"

// Overrides are what a wrapper adds to every call that reaches the router (Read, Apply,
// ReadVersion, ApplyIf): nil funcs add nothing.
type Overrides struct {
	// Before runs before each such call; its error is the call's answer, and the wrapped driver
	// is not called (a drill's router-unreachable fault, a killed orchestrator).
	Before func() error
	// After runs after each write (Apply, ApplyIf) the wrapped driver accepted.
	After func()
}

// Wrap returns inner with o applied to its calls. The result has exactly inner's optional
// capabilities — ConditionalDriver, ZeroDrainDriver, NotingDriver — whatever their combination,
// so a wrapper never hides one (the executor asks them by type assertion) nor claims one inner
// lacks. Every driver wrapper goes through it. Unwrap() on the result returns inner.
func Wrap(inner Driver, o Overrides) Driver {
	w := &wrapped{inner: inner, o: o}
	_, c := inner.(ConditionalDriver)
	_, z := inner.(ZeroDrainDriver)
	_, n := inner.(NotingDriver)
	cp, zp, np := condPart{w}, zeroPart{w}, notePart{w}
	switch {
	case c && z && n:
		return struct {
			*wrapped
			condPart
			zeroPart
			notePart
		}{w, cp, zp, np}
	case c && z:
		return struct {
			*wrapped
			condPart
			zeroPart
		}{w, cp, zp}
	case c && n:
		return struct {
			*wrapped
			condPart
			notePart
		}{w, cp, np}
	case z && n:
		return struct {
			*wrapped
			zeroPart
			notePart
		}{w, zp, np}
	case c:
		return struct {
			*wrapped
			condPart
		}{w, cp}
	case z:
		return struct {
			*wrapped
			zeroPart
		}{w, zp}
	case n:
		return struct {
			*wrapped
			notePart
		}{w, np}
	}
	return w
}

// wrapped is the Driver part of every wrapper Wrap returns.
type wrapped struct {
	inner Driver
	o     Overrides
}

func (w *wrapped) before() error {
	if w.o.Before == nil {
		return nil
	}
	return w.o.Before()
}

func (w *wrapped) after() {
	if w.o.After != nil {
		w.o.After()
	}
}

func (w *wrapped) Read(ctx context.Context) (RouterState, error) {
	if err := w.before(); err != nil {
		return RouterState{}, err
	}
	return w.inner.Read(ctx)
}

func (w *wrapped) Apply(ctx context.Context, desired RouterState) error {
	if err := w.before(); err != nil {
		return err
	}
	if err := w.inner.Apply(ctx, desired); err != nil {
		return err
	}
	w.after()
	return nil
}

func (w *wrapped) MaxWeight() int { return w.inner.MaxWeight() }
func (w *wrapped) String() string { return w.inner.String() }

// Unwrap is the wrapped driver.
func (w *wrapped) Unwrap() Driver { return w.inner }

// condPart forwards ConditionalDriver: the inner driver's own compare-and-swap, not a digest of
// a Read.
type condPart struct{ w *wrapped }

func (p condPart) ReadVersion(ctx context.Context) (RouterState, RouterVersion, error) {
	if err := p.w.before(); err != nil {
		return RouterState{}, nil, err
	}
	return p.w.inner.(ConditionalDriver).ReadVersion(ctx)
}

func (p condPart) ApplyIf(ctx context.Context, desired RouterState, since RouterVersion, fence func() error) error {
	if err := p.w.before(); err != nil {
		return err
	}
	if err := p.w.inner.(ConditionalDriver).ApplyIf(ctx, desired, since, fence); err != nil {
		return err
	}
	p.w.after()
	return nil
}

// zeroPart forwards ZeroDrainDriver.
type zeroPart struct{ w *wrapped }

func (p zeroPart) ZeroWeightIsDrain() bool { return p.w.inner.(ZeroDrainDriver).ZeroWeightIsDrain() }

// notePart forwards NotingDriver.
type notePart struct{ w *wrapped }

func (p notePart) Notes() []string { return p.w.inner.(NotingDriver).Notes() }
