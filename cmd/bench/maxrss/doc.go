// Command maxrss runs a command and writes its exact peak resident memory, wall time, CPU time and
// exit code to a file, for the bench's memory lines (a child of a large Go process cannot measure
// its own peak: see below).
//
//	maxrss RESULT_FILE COMMAND [ARG...]
//
// RESULT_FILE gets one line: "MAXRSS_KB FLOOR_KB WALL_NS EXIT_CODE CPU_NS" (CPU_NS: user + system
// time of COMMAND and the children it waited for). The exit code is also maxrss's own (127 when
// COMMAND could not be started).
//
// Why not the bench's own rusage: Go starts children with vfork (CLONE_VM), and Linux charges
// the high-water RSS of the memory a process had when it called exec to that process's maxrss —
// for a vforked child, the parent's. Every child of a large process so reports at least the
// parent's peak. This program is small, so a command it starts carries only its few MB; it reads
// its own high-water mark just before the start and reports it as FLOOR_KB, the most of MAXRSS_KB
// that can be its own rather than COMMAND's.
package main
