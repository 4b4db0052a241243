package shm

import (
	"syscall"
	_ "unsafe" // for go:linkname
)

// A side that sleeps at every wait (its polls capped at 0: more ranks than
// cores) tells the Go runtime that its futex sleeps block
// (entersyscallblock, as the runtime's own blocking waits do), so the
// runtime hands the thread's P to other work at once. With the ordinary
// entry (syscall.Syscall6) the P stays with the sleeping thread until the
// runtime's monitor (sysmon) takes it back, and each such take puts the
// monitor back to waking every 20 µs for the next millisecond: in ranks
// that sleep at every wait it never calmed (in a traced run of NAS IS on 4
// ranks and 2 cores the ranks' sysmon threads ran 99 of their 635 ms). A
// side that polls first sleeps less often, and there the hand-off cost
// more than it saved: the sleeping thread can no longer take its own P
// back on waking, and one that takes an idle P instead wakes a sysmon
// asleep (BENCHMARKS.md, "sysmon").
//
//go:linkname entersyscallblock runtime.entersyscallblock
func entersyscallblock()

//go:linkname exitsyscall runtime.exitsyscall
func exitsyscall()

// sleepSyscall6 makes a system call that sleeps, handing the thread's P
// off at once when handoff says so. Callers keep what their arguments
// point to alive (runtime.KeepAlive).
func sleepSyscall6(handoff bool, trap, a1, a2, a3, a4, a5, a6 uintptr) (r1, r2 uintptr, err syscall.Errno) {
	if handoff {
		return blockingSyscall6(trap, a1, a2, a3, a4, a5, a6)
	}
	return syscall.Syscall6(trap, a1, a2, a3, a4, a5, a6)
}

// blockingSyscall6 is syscall.Syscall6 for a system call that sleeps long.
//
//go:nosplit
func blockingSyscall6(trap, a1, a2, a3, a4, a5, a6 uintptr) (r1, r2 uintptr, err syscall.Errno) {
	entersyscallblock()
	r1, r2, err = syscall.RawSyscall6(trap, a1, a2, a3, a4, a5, a6)
	exitsyscall()
	return
}
