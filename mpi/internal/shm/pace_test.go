package shm

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPacing: a run of quietRun yields that let nobody run doubles the
// span, from spanStep up to spanMax; one that let another thread run
// brings it back to 0 (yield at every check) and starts the run again.
func TestPacing(t *testing.T) {
	const us = time.Microsecond
	for _, c := range []struct {
		name     string
		from     pacing
		switched bool
		want     pacing
	}{
		{"a quiet yield counts", pacing{0, 0}, false, pacing{0, 1}},
		{"one short of a run", pacing{0, quietRun - 2}, false, pacing{0, quietRun - 1}},
		{"a run: the first span", pacing{0, quietRun - 1}, false, pacing{spanStep, 0}},
		{"a run doubles", pacing{2 * us, quietRun - 1}, false, pacing{4 * us, 0}},
		{"a run stops at the bound", pacing{5 * us, quietRun - 1}, false, pacing{spanMax, 0}},
		{"a run at the bound", pacing{spanMax, quietRun - 1}, false, pacing{spanMax, 0}},
		{"within a run the span stays", pacing{4 * us, 3}, false, pacing{4 * us, 4}},
		{"the kernel ran another thread", pacing{spanMax, 10}, true, pacing{}},
		{"switched at the end of a run", pacing{spanMax, quietRun - 1}, true, pacing{}},
	} {
		if got := c.from.next(c.switched); got != c.want {
			t.Errorf("%s: %+v.next(%v) = %+v, want %+v", c.name, c.from, c.switched, got, c.want)
		}
	}
	if spanMax >= Poll || spanStep > spanMax || goschedEvery >= Poll || quietRun < 1 {
		t.Errorf("span bounds %v..%v and the Gosched period %v must lie below the poll's %v", spanStep, spanMax, goschedEvery, Poll)
	}
}

// TestYieldSeesASwitch: a thread that yields while another thread of this
// process spins on the same core is switched out sooner or later, and
// yield says so.
func TestYieldSeesASwitch(t *testing.T) {
	if switches() < 0 {
		t.Skip("getrusage(RUSAGE_THREAD) unavailable")
	}
	// The spinner must be a running thread, not a goroutine waiting for
	// the only P: with GOMAXPROCS 1 a preempted spinner is parked, and no
	// thread is runnable beside the yielder (go test -cpu 1).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
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
	p := StartPoll(time.Hour)
	for !p.yield() {
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

// TestPollLetsReadyGoroutinesRun: with one P, a goroutine made ready
// while the process polls is seen waiting, and the poll lets it run.
func TestPollLetsReadyGoroutinesRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var ran atomic.Bool
	p := StartPoll(time.Hour)
	go ran.Store(true) // ready, and waiting for the only P this goroutine holds
	if !othersReady() && !ran.Load() {
		t.Fatal("a goroutine waits for the only P, and the poll does not see it")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !ran.Load() {
		if !p.Next() || time.Now().After(deadline) {
			t.Fatal("10 s of polling with one P, and the goroutine made ready never ran")
		}
	}
	if raceOn {
		return // allocations are counted without the race detector, whose instrumentation is not the program's
	}
	if n := testing.AllocsPerRun(100, func() { othersReady() }); n != 0 {
		t.Errorf("asking the runtime for ready goroutines allocates %v times", n)
	}
}

// TestPollDoesNotAllocate: a poll runs between every two messages; one
// that allocated would bring the collector, and its stalls, to every
// ping-pong.
func TestPollDoesNotAllocate(t *testing.T) {
	if raceOn {
		t.Skip("allocations are counted without the race detector, whose instrumentation is not the program's")
	}
	n := testing.AllocsPerRun(20, func() {
		for p := StartPoll(2 * goschedEvery); p.Next(); {
		}
	})
	if n != 0 {
		t.Errorf("a poll allocates %v times", n)
	}
}
