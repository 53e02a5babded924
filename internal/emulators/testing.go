package emulators

import (
	"errors"
	"os"
	"sync"
	"testing"
)

// Shared emulators start once per test binary, on first use, and stop in Main.
var (
	mu      sync.Mutex
	started []interface{ Stop() }
	dirs    []string

	sharedS3   shared[*S3]
	sharedAz   shared[*Azurite]
	sharedReg  shared[*Registry]
	sharedReg2 shared[*Registry]
	gcsOnce    sync.Once
	gcsInst    *GCS
	gcsErr     error
)

// shared is one emulator of the test binary, started on first use in a temporary directory.
type shared[T interface{ Stop() }] struct {
	once sync.Once
	v    T
	err  error
}

func (s *shared[T]) get(t testing.TB, name string, start func(dir string) (T, error)) T {
	t.Helper()
	s.once.Do(func() {
		dir, err := os.MkdirTemp("", "lifeboat-"+name+"-")
		if err != nil {
			s.err = err
			return
		}
		s.v, s.err = start(dir)
		if s.err == nil {
			register(s.v, dir)
		} else {
			os.RemoveAll(dir)
		}
	})
	if s.err != nil {
		Unavailable(t, s.err)
	}
	return s.v
}

// Main runs the tests and then stops the shared emulators: func TestMain(m *testing.M) {
// os.Exit(emulators.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	StopShared()
	return code
}

// StopShared stops every shared emulator and removes their directories.
func StopShared() {
	mu.Lock()
	defer mu.Unlock()
	for i := len(started) - 1; i >= 0; i-- {
		started[i].Stop()
	}
	started = nil
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
	dirs = nil
}

func register(s interface{ Stop() }, dir string) {
	mu.Lock()
	defer mu.Unlock()
	started = append(started, s)
	if dir != "" {
		dirs = append(dirs, dir)
	}
}

// Unavailable skips the test when an emulator is not installed — or fails it when
// LIFEBOAT_REQUIRE_EMULATORS=1 — and fails it for any other start-up error.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNotInstalled) && os.Getenv(RequireEnv) != "1" {
		t.Skipf("%v (set %s=1 to make this a failure)", err, RequireEnv)
	}
	t.Fatal(err)
}

// SharedVersityGW returns the test binary's versitygw, starting it on first use.
func SharedVersityGW(t testing.TB) *S3 {
	t.Helper()
	return sharedS3.get(t, "versitygw", StartVersityGW)
}

// SharedAzurite returns the test binary's Azurite, starting it on first use.
func SharedAzurite(t testing.TB) *Azurite {
	t.Helper()
	return sharedAz.get(t, "azurite", StartAzurite)
}

// InitFakeGCS starts the test binary's fake-gcs-server (once) and points STORAGE_EMULATOR_HOST at
// it for the rest of the binary's life. Call it from TestMain before any test runs: every GCS
// client made afterwards talks to the emulator, and none goes looking for Google credentials
// (ADC detection would probe the GCE metadata server).
func InitFakeGCS() (*GCS, error) {
	gcsOnce.Do(func() {
		gcsInst, gcsErr = StartFakeGCS(nil)
		if gcsErr == nil {
			register(gcsInst, "")
			gcsErr = os.Setenv("STORAGE_EMULATOR_HOST", gcsInst.Host)
		}
	})
	return gcsInst, gcsErr
}

// SharedFakeGCS returns the test binary's fake-gcs-server (see InitFakeGCS).
func SharedFakeGCS(t testing.TB) *GCS {
	t.Helper()
	g, err := InitFakeGCS()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// NewVersityGW starts a private versitygw for one test; it stops on t.Cleanup.
func NewVersityGW(t testing.TB) *S3 {
	t.Helper()
	s, err := StartVersityGW(t.TempDir())
	if err != nil {
		Unavailable(t, err)
	}
	t.Cleanup(s.Stop)
	return s
}

// NewAzurite starts a private Azurite for one test; it stops on t.Cleanup.
func NewAzurite(t testing.TB) *Azurite {
	t.Helper()
	a, err := StartAzurite(t.TempDir())
	if err != nil {
		Unavailable(t, err)
	}
	t.Cleanup(a.Stop)
	return a
}
