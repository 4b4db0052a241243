package shm

import (
	"syscall"
	_ "unsafe" // for go:linkname
)

// A futex sleep tells the Go runtime it blocks (entersyscallblock, as the
// runtime's own blocking waits do), so the runtime hands the thread's P to
// other work at once. With the ordinary entry (syscall.Syscall6) the P
// stays with the sleeping thread until the runtime's monitor (sysmon)
// takes it back, and each such take puts the monitor back to waking every
// 20 µs for the next millisecond: with ranks that sleep at every wait
// (more ranks than cores) it never calmed, and its wake-ups took 15 % of
// the ranks' processor time in NAS IS (BENCHMARKS.md, issue 17).
//
//go:linkname entersyscallblock runtime.entersyscallblock
func entersyscallblock()

//go:linkname exitsyscall runtime.exitsyscall
func exitsyscall()

// blockingSyscall6 is syscall.Syscall6 for a system call that sleeps.
// Callers keep what their arguments point to alive (runtime.KeepAlive).
//
//go:nosplit
func blockingSyscall6(trap, a1, a2, a3, a4, a5, a6 uintptr) (r1, r2 uintptr, err syscall.Errno) {
	entersyscallblock()
	r1, r2, err = syscall.RawSyscall6(trap, a1, a2, a3, a4, a5, a6)
	exitsyscall()
	return
}
