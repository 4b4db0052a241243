package shm

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNextSpan: yields that let nobody run stretch the span by doubling,
// from spanStep up to spanMax; one that let another thread run (switched,
// or slow) brings it back to 0 (yield at every check).
func TestNextSpan(t *testing.T) {
	const us = time.Microsecond
	for _, c := range []struct {
		name       string
		span, took time.Duration
		switched   bool
		want       time.Duration
	}{
		{"quick from every check", 0, 1 * us, false, spanStep},
		{"quick doubles", 1 * us, 2 * us, false, 2 * us},
		{"quick doubles again", 2 * us, 1 * us, false, 4 * us},
		{"quick stops at the bound", 5 * us, 1 * us, false, spanMax},
		{"quick at the bound", spanMax, 1 * us, false, spanMax},
		{"just under the threshold is quick", 2 * us, quickYield - 1, false, 4 * us},
		{"a zero yield is quick", 0, 0, false, spanStep},
		{"the kernel ran another thread, however fast", spanMax, 2 * us, true, 0},
		{"switched and slow", 4 * us, 7 * us, true, 0},
		{"at the threshold: a goroutine ran", 2 * us, quickYield, false, 0},
		{"a whole slice", spanMax, 3 * time.Millisecond, false, 0},
		{"slow stays at every check", 0, 10 * us, false, 0},
		{"switched stays at every check", 0, 1 * us, true, 0},
	} {
		if got := nextSpan(c.span, c.took, c.switched); got != c.want {
			t.Errorf("%s: nextSpan(%v, %v, %v) = %v, want %v", c.name, c.span, c.took, c.switched, got, c.want)
		}
	}
	if spanMax >= Poll || spanStep > spanMax || quickYield <= 0 {
		t.Errorf("span bounds %v..%v must lie below the poll's %v", spanStep, spanMax, Poll)
	}
}

// TestYieldSeesASwitch: a thread that yields while another thread of this
// process spins on the same core is switched out sooner or later, and
// yield says so.
func TestYieldSeesASwitch(t *testing.T) {
	if _, ok := switches(); !ok {
		t.Skip("getrusage(RUSAGE_THREAD) unavailable")
	}
	cpu := pinned(t, -1)
	var spinning, stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // ends locked: the pinned thread goes with it
		var set unix.CPUSet
		set.Set(cpu)
		if unix.SchedSetaffinity(0, &set) != nil {
			return
		}
		spinning.Store(true)
		for !stop.Load() {
		}
	}()
	defer func() { stop.Store(true); <-done }()
	for !spinning.Load() {
		select {
		case <-done:
			t.Skip("could not pin a second thread")
		default:
			runtime.Gosched()
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for !yield() {
		if time.Now().After(deadline) {
			t.Fatal("5 s of yields beside a thread spinning on the same core, and none switched")
		}
	}
}

// pinned locks the calling goroutine to its thread and the thread to cpu
// (or, with -1, to the first CPU it may use) and returns the CPU. The
// goroutine must end locked, so that its thread, pinned, ends with it.
func pinned(t *testing.T, cpu int) int {
	runtime.LockOSThread()
	if cpu < 0 {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			t.Skip("sched_getaffinity:", err)
		}
		for cpu = 0; !set.IsSet(cpu); cpu++ {
		}
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Skip("sched_setaffinity:", err)
	}
	return cpu
}
