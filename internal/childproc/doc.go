// Package childproc builds the process attributes the test harness and benches give the servers
// they start: their own process group and, on Linux, death with the parent (Pdeathsig).
//
// A killed test run then leaves no emulator behind. Other systems lack Pdeathsig; there the
// harness still compiles (`make cross-build` vets it for darwin) and relies on its own cleanup.
package childproc
