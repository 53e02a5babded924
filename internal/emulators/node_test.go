package emulators

import (
	"errors"
	"testing"
)

// A missing npm package is ErrNotInstalled, so Unavailable skips (or fails under
// LIFEBOAT_REQUIRE_EMULATORS=1) rather than passing silently.
func TestNodeModulesMissingPackage(t *testing.T) {
	_, err := NodeModules("@lifeboat/no-such-package")
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("err = %v, want ErrNotInstalled", err)
	}
}
