// Package childproc builds the process attributes the test harness and benches give the servers
// they start: a process group of their own, and on Linux death with the parent (Pdeathsig), so a
// killed test run leaves no emulator behind.
//
// Other systems lack Pdeathsig; there the harness still
// compiles (`make cross-build` vets it for darwin) and relies on its own cleanup.
package childproc
