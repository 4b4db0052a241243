//go:build !linux

package proc

import (
	"context"
	"errors"
)

// errUnsupported is returned by Start where this package cannot run
// processes: it needs Linux (waitid on process groups, prlimit, subreaper).
var errUnsupported = errors.New("proc: running processes needs Linux")

type unsupported struct{}

// NewRunner returns a Runner whose Start fails: processes run only on Linux.
func NewRunner(Config) Runner { return unsupported{} }

func (unsupported) Start(context.Context, Spec, OutputFunc) (Process, error) {
	return nil, errUnsupported
}

// KillLeftovers finds nothing where processes do not run.
func KillLeftovers(string) (int, error) { return 0, nil }
