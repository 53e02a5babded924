//go:build !linux

package lockowner

import (
	"errors"
	"os"
)

// Elsewhere than Linux a holder's process is never looked at: this host does not identify itself,
// so every holder is CannotTell and its lock is waited out (its TTL on this process's clock).
var (
	errNoProcess    = errors.New("no such process")
	errNotPermitted = errors.New("operation not permitted")
)

func signalZero(int) error { return errors.ErrUnsupported }

func ReadProcStat(int) ([]byte, error) { return nil, errors.ErrUnsupported }

func ThisOwner() *Owner { return &Owner{PID: os.Getpid()} }
