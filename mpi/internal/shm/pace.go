package shm

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pacing a poll. A poll looks at shared memory in a loop and, now and
// then, gives the processor away (yield): on a machine with more runnable
// threads than cores, the peer that will write may be the thread waiting
// for the core the poller holds, and in one process the writer may be a
// goroutine waiting for the poller's P. But a yield is not free: here
// runtime.Gosched costs about 2 µs when the process has an idle P (it wakes
// a thread to look for work), and a message that lands meanwhile waits for
// it. Yielding every 64 looks made the quiet-machine floor of an 8-byte
// ping-pong between two processes 2.4 µs; yielding every 4096, 0.4 µs, but
// with both processes on one core (the other busy) each message then waits
// for the poller's next yield.
//
// So the poll adapts to what its yields show. A yield that let nobody run
// (the thread was not switched out, and it came back at once) means nobody
// wanted this core or this process's P: the poll may spin longer before it
// yields again, up to spanMax. A yield that let another thread or goroutine
// run means the core (or the process's Ps) is oversubscribed: the poll
// yields at every check again. The time alone does not tell: under the
// EEVDF scheduler a sched_yield with the peer runnable on the same core
// often returns without running it, and one that runs it comes back in 2
// to 10 µs, as long as an idle Gosched that wakes a thread. So the thread's
// own count of context switches (getrusage) says whether the kernel ran
// another thread, and the time whether Gosched ran a goroutine for long.
// The span is shared by every poll of the process, as the machine's state
// is.

// Pacing constants.
const (
	// quickYield: a yield that took this long let another thread or
	// goroutine run, whatever the switch count says (a goroutine's turn
	// after Gosched, a preemption). Here an idle Gosched plus sched_yield
	// takes 0.2 to 2.5 µs.
	quickYield = 4 * time.Microsecond
	// spanStep is the first span after a yield that let nobody run; spans
	// double from there on each such yield.
	spanStep = 1 * time.Microsecond
	// spanMax bounds the span, well below Poll, so that every long poll
	// still yields a few times and notices when the machine fills up.
	spanMax = 8 * time.Microsecond
	// checkEvery: a poll reads the clock (and may yield) once in this
	// many looks; a look is a few nanoseconds, a clock read some 35 ns.
	checkEvery = 64
)

// nextSpan is how long a poll spins before its next yield, given the span
// it spun before the last yield, how long that yield took and whether the
// kernel switched to another thread during it.
func nextSpan(span, took time.Duration, switched bool) time.Duration {
	if switched || took >= quickYield {
		return 0 // another thread or goroutine ran: yield at every check
	}
	return min(max(2*span, spanStep), spanMax)
}

// span is the process's current span. Polls update it concurrently; a
// lost update costs one yield's worth of adaptation.
var span atomic.Int64

// Poller paces one poll: call Next after every look that found nothing.
type Poller struct {
	start, last time.Time // when the poll began, and its last yield ended
	limit       time.Duration
	looks       int
}

// StartPoll starts a poll that lasts at most limit.
func StartPoll(limit time.Duration) Poller {
	now := time.Now()
	return Poller{start: now, last: now, limit: limit}
}

// Next yields the processor when the span is up and reports whether the
// poll may go on (false: its time is up, the caller sleeps instead).
func (p *Poller) Next() bool {
	p.looks++
	if p.looks%checkEvery != 0 {
		return true
	}
	now := time.Now()
	if now.Sub(p.start) > p.limit {
		return false
	}
	cur := time.Duration(span.Load())
	if now.Sub(p.last) < cur {
		return true
	}
	switched := yield()
	p.last = time.Now()
	span.Store(int64(nextSpan(cur, p.last.Sub(now), switched)))
	return true
}

// yield gives the processor away for a moment, to this program's other
// goroutines and to other processes, and reports whether the kernel ran
// another thread meanwhile (this thread's context switch count moved).
func yield() (switched bool) {
	runtime.Gosched()
	// The goroutine stays on its thread from here to the end (raw system
	// calls keep the P); a rare preemption in between only makes this
	// yield look like one that ran another thread.
	before, ok := switches()
	_, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	after, ok2 := switches()
	return ok && ok2 && after != before
}

// switches is the calling thread's count of context switches, voluntary or
// not (a sched_yield that runs another thread counts as involuntary).
func switches() (int64, bool) {
	var ru unix.Rusage
	_, _, e := unix.RawSyscall(unix.SYS_GETRUSAGE, uintptr(unix.RUSAGE_THREAD), uintptr(unsafe.Pointer(&ru)), 0)
	return ru.Nvcsw + ru.Nivcsw, e == 0
}
