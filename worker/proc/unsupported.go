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

func (unsupported) Close() error { return nil }

func (unsupported) NewSandbox(string, Resources) (*Sandbox, error) { return nil, errUnsupported }

func (unsupported) Isolation() Isolation {
	return Isolation{Users: "none", Cgroups: "none", Freezer: "none", Network: "host", Err: errUnsupported}
}

// Sandbox is a job's sandbox; there is none where processes do not run.
type Sandbox struct{}

// Credential is nil: there is no sandbox user.
func (*Sandbox) Credential() *Credential { return nil }

// Own does nothing.
func (*Sandbox) Own(string) error { return nil }

// Events is empty.
func (*Sandbox) Events() Events { return Events{} }

// Close does nothing.
func (*Sandbox) Close() error { return nil }

// KillLeftovers finds nothing where processes do not run.
func KillLeftovers(string) (int, error) { return 0, nil }

// IsolatesNetwork is false: there is no sandbox.
func (*Sandbox) IsolatesNetwork() bool { return false }

func freezeJob(*Sandbox, []Process, bool) error { return errUnsupported }
