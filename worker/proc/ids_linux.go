//go:build linux && !386 && !arm

package proc

import "golang.org/x/sys/unix"

// System calls that change the calling thread's IDs (32-bit IDs).
const (
	sysSetgroups = unix.SYS_SETGROUPS
	sysSetgid    = unix.SYS_SETGID
	sysSetuid    = unix.SYS_SETUID
)
