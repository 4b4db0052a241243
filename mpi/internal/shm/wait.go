package shm

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Waiting: Poll spins this long for the peer before sleeping; a sleep lasts
// at most Nap, after which the caller's check runs again.
const (
	Poll = 50 * time.Microsecond
	Nap  = 100 * time.Millisecond
)

// wait blocks until ready reports true, check fails, or the word at word
// changes while we sleep (arm tells the peer we sleep, disarm that we
// no longer do; the peer changes the word before it wakes us). ready is
// evaluated after arming, so a peer that moved before reading the flag is
// seen: the sequentially consistent atomics order the two sides. With
// spin false, wait sleeps at once.
func (r *Ring) wait(word int, arm, disarm func(), spin bool, ready func() (bool, error), check func() error) error {
	// The poll gives the processor away now and then (Poller): on a
	// machine with more runnable threads than cores, the peer that will
	// write may be the one waiting for it.
	for p := r.poll(Poll); spin; {
		ok, err := ready()
		if ok || err != nil {
			return err
		}
		if !p.Next() {
			break
		}
	}
	for {
		seen := atomic.LoadUint32(r.u32(word))
		arm()
		ok, err := ready()
		if ok || err != nil {
			disarm()
			return err
		}
		futexWait(r.u32(word), seen, Nap, r.sleepsAtOnce())
		disarm()
		if ok, err := ready(); ok || err != nil {
			return err
		}
		if err := check(); err != nil {
			return err
		}
	}
}

// wakeIf wakes the peer sleeping on word if its flag says it sleeps.
func (r *Ring) wakeIf(word, flag int) {
	if atomic.LoadUint32(r.u32(flag)) != 0 {
		futexWake(r.u32(word))
	}
}

// Futex operations on a shared (not process-private) word.
const (
	futexWaitOp = 0
	futexWakeOp = 1
)

// futexWait sleeps while *addr holds val, for at most d; handoff says
// whether the sleep gives the thread's P up at once (syscall.go).
func futexWait(addr *uint32, val uint32, d time.Duration, handoff bool) {
	ts := unix.NsecToTimespec(int64(d))
	_, _, _ = sleepSyscall6(handoff, unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
	runtime.KeepAlive(&ts)
}

// futexWake wakes every sleeper on addr: the read side may have two (a
// Read and the standby reader).
func futexWake(addr *uint32) {
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, 1<<30, 0, 0, 0)
}
