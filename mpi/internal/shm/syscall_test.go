package shm

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestBlockingSyscallReturnsErrno: the sleeping system call's result
// comes back as syscall.Syscall6's would: a futex wait on a word that no
// longer holds the value fails at once with EAGAIN.
func TestBlockingSyscallReturnsErrno(t *testing.T) {
	var word uint32 = 1
	ts := unix.NsecToTimespec(int64(time.Hour))
	_, _, e := blockingSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&word)), futexWaitOp, 0,
		uintptr(unsafe.Pointer(&ts)), 0, 0)
	runtime.KeepAlive(&word)
	if e != unix.EAGAIN {
		t.Fatalf("futex wait on a changed word: errno %v, want EAGAIN", e)
	}
}

// TestSleepLeavesTheProcessorToOthers: with one P, a goroutine asleep in
// futexWait leaves it to the rest of the program, which runs and wakes
// it.
func TestSleepLeavesTheProcessorToOthers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var word uint32
	woke := make(chan struct{})
	go func() {
		defer close(woke)
		for atomic.LoadUint32(&word) == 0 { // a futex wait may end spuriously
			futexWait(&word, 0, time.Hour)
		}
	}()
	runtime.Gosched() // let it go to sleep (if it has not, the wait below does not begin)
	atomic.StoreUint32(&word, 1)
	futexWake(&word)
	select {
	case <-woke:
	case <-time.After(time.Minute): // a hang guard, not a speed bound
		t.Fatal("the sleeper was not woken")
	}
}
