// Package startgc keeps the garbage collector off while the binary starts, and gives it back.
// Initialising the binary's packages allocates ~5.5 MB, almost all live; collecting it cost two
// collections in every command. Imported by main only; nothing else may depend on it.
//
// It runs early because Go initialises, at each step, the first package by import path whose
// imports are all initialised, and this one needs only os, time and runtime/debug.
package startgc
