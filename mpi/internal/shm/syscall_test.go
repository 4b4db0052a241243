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
// futexWait, handing its P off at once or not, leaves it to the rest of
// the program, which runs and wakes it.
func TestSleepLeavesTheProcessorToOthers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, handoff := range []bool{true, false} {
		var word uint32
		woke := make(chan struct{})
		go func() {
			defer close(woke)
			for atomic.LoadUint32(&word) == 0 { // a futex wait may end spuriously
				futexWait(&word, 0, time.Hour, handoff)
			}
		}()
		runtime.Gosched() // let it go to sleep (if it has not, the wait below does not begin)
		atomic.StoreUint32(&word, 1)
		futexWake(&word)
		select {
		case <-woke:
		case <-time.After(time.Minute): // a hang guard, not a speed bound
			t.Fatalf("handoff %v: the sleeper was not woken", handoff)
		}
	}
}

// TestOnlyASideThatSleepsAtOnceHandsItsPOff: the hand-off follows the cap
// on polls that a host with more ranks than cores sets.
func TestOnlyASideThatSleepsAtOnceHandsItsPOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		cap  func(*Ring)
		want bool
	}{
		{"polls", func(*Ring) {}, false},
		{"capped at 20us", func(r *Ring) { r.CapPolls(20 * time.Microsecond) }, false},
		{"capped at 0", func(r *Ring) { r.CapPolls(0) }, true},
	} {
		w, _ := pair(t, MinCap)
		tc.cap(w)
		if got := w.sleepsAtOnce(); got != tc.want {
			t.Errorf("%s: sleepsAtOnce %v, want %v", tc.name, got, tc.want)
		}
	}
}
