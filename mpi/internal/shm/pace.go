package shm

import (
	"runtime"
	"sync"
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
// So the poll adapts to what its yields show. A yield that let another
// thread or goroutine run means the core (or the process's Ps) is
// oversubscribed: the poll yields at every check. A long run of yields
// that let nobody run (the thread was not switched out, and each came back
// at once) means nobody wants this core: the poll spins longer before it
// yields again, doubling the span up to spanMax. One quick yield proves
// nothing: under the EEVDF scheduler a sched_yield with a runnable peer on
// the same core returns without running it about 15 times in 16 (each
// yield only pushes the yielder's deadline back), and the time alone does
// not tell either, as one that runs the peer comes back in 2 to 10 µs, as
// long as an idle Gosched that wakes a thread. So the thread's own count of
// context switches (getrusage) says whether the kernel ran another thread,
// and the time whether Gosched ran a goroutine for long. The pacing is
// shared by every poll of the process, as the machine's state is.

// Pacing constants.
const (
	// quickYield: a yield that took this long let another thread or
	// goroutine run, whatever the switch count says (a goroutine's turn
	// after Gosched, a preemption). Here an idle Gosched plus sched_yield
	// takes 0.2 to 2.5 µs.
	quickYield = 4 * time.Microsecond
	// quietRun: this many yields in a row that let nobody run double the
	// span. With a peer runnable on the same core about one yield in 16
	// runs it: a run of 64 without is rare then (2%), and on a quiet
	// machine it takes some 64 x 2.5 µs of polling.
	quietRun = 64
	// spanStep is the first span after a run of yields that let nobody
	// run; spans double from there on each further run.
	spanStep = 1 * time.Microsecond
	// spanMax bounds the span, well below Poll, so that every long poll
	// still yields a few times and notices when the machine fills up.
	spanMax = 8 * time.Microsecond
	// checkEvery: a poll reads the clock (and may yield) once in this
	// many looks; a look is a few nanoseconds, a clock read some 35 ns.
	checkEvery = 64
)

// pacing is what a process's polls learned from their yields: how long to
// spin before the next yield, and how many yields in a row let nobody run.
type pacing struct {
	span  time.Duration
	quiet int
}

// next is the pacing after a yield that took took, during which the kernel
// switched to another thread or not.
func (p pacing) next(took time.Duration, switched bool) pacing {
	if switched || took >= quickYield {
		return pacing{} // another thread or goroutine ran: yield at every check
	}
	if p.quiet++; p.quiet >= quietRun {
		p.span, p.quiet = min(max(2*p.span, spanStep), spanMax), 0
	}
	return p
}

// The process's pacing, updated under paceMu after each yield (which costs
// microseconds anyway); every check reads the span without the lock.
var (
	paceMu sync.Mutex
	pace   pacing
	span   atomic.Int64 // pace.span, read without the lock by every check
)

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
	paceMu.Lock()
	pace = pace.next(p.last.Sub(now), switched)
	span.Store(int64(pace.span))
	paceMu.Unlock()
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
