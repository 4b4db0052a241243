//go:build linux && (386 || arm)

package proc

import "golang.org/x/sys/unix"

// System calls that change the calling thread's IDs: the 32-bit-ID ones,
// which these architectures name apart from the legacy 16-bit calls.
const (
	sysSetgroups = unix.SYS_SETGROUPS32
	sysSetgid    = unix.SYS_SETGID32
	sysSetuid    = unix.SYS_SETUID32
)
