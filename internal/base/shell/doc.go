// Package shell is Lifeboat's one shell quoting: Quote makes a string one word of a POSIX shell
// command line, for the pasteable commands in hints, notifications and launch commands.
package shell
