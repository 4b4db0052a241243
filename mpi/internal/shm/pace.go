package shm

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pacing a poll. A poll looks at shared memory in a loop and, now and
// then, gives the processor away (yield): on a machine with more runnable
// threads than cores, the peer that will write may be the thread waiting
// for the core the poller holds. But a yield is not free: it is a system
// call (sched_yield), and one to count the thread's context switches
// (getrusage), each 0.1 µs on some machines and 1.1 µs on others (a VM
// here), and a message that lands meanwhile waits for it. Yielding every
// 64 looks made the quiet-machine floor of an 8-byte ping-pong between two
// processes 2.4 µs; yielding every 4096, 0.4 µs, but with both processes
// on one core (the other busy) each message then waits for the poller's
// next yield.
//
// So the poll adapts to what its yields show. A yield that let another
// thread run, or a spin since the last yield that was switched out, means
// the core is oversubscribed: the poll yields at every check. A long run
// of yields that let nobody run means nobody wants this core: the poll
// spins longer before it yields again, doubling the span up to spanMax.
// One quick yield proves nothing: under the EEVDF scheduler a sched_yield
// with a runnable peer on the same core returns without running it about
// 15 times in 16 (each yield only pushes the yielder's deadline back), and
// its time does not tell either (a yield that runs the peer can come back
// as fast as a system call on a slow VM), so the thread's own count of
// context switches says whether the kernel ran another thread. The pacing
// is shared by every poll of the process, as the machine's state is.
//
// The process's own goroutines are another matter: every goschedEvery the
// poll lets them run (runtime.Gosched), whatever the pacing says, if the
// runtime holds any that are ready to run, and does not judge the machine
// by it. A Gosched with none waiting is dearer than it looks: with an idle
// P it wakes another thread to look for work (the runtime's wakep), which
// takes a core for microseconds, often the core the peer rank polls on, so
// the peer's answer comes late, its own poll lasts past goschedEvery and it
// does the same: on a quiet VM that cascade made 1 % of an 8-byte
// ping-pong's round trips take 5-18 µs. Asking the runtime (runtime/metrics)
// costs 0.1 µs and no system call. A goroutine made ready while every P
// polls waits at most goschedEvery.

// Pacing constants.
const (
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
	// goschedEvery: a poll looks this often whether the process's other
	// goroutines wait for a P, and lets them run if so.
	goschedEvery = 16 * time.Microsecond
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

// next is the pacing after a yield during (or since the last yield before)
// which the kernel switched to another thread, or not.
func (p pacing) next(switched bool) pacing {
	if switched {
		return pacing{} // another thread ran: yield at every check
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
	gosched     time.Time // when the poll last let the process's goroutines run
	limit       time.Duration
	looks       int
	seen        int64 // the thread's context switches at the last yield; -1: not counted yet
}

// StartPoll starts a poll that lasts at most limit.
func StartPoll(limit time.Duration) Poller {
	now := time.Now()
	return Poller{start: now, last: now, gosched: now, limit: limit, seen: -1}
}

// The process's count of goroutines ready to run but not running, read
// under readyMu: one sample for every poll, as a Poller's own would escape
// to the heap and each poll would then allocate.
var (
	readyMu     sync.Mutex
	readySample = [1]metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}
)

// othersReady reports whether goroutines of this process wait for a P (or
// the runtime cannot tell, then it says yes: a Gosched is safe).
func othersReady() bool {
	readyMu.Lock()
	defer readyMu.Unlock()
	metrics.Read(readySample[:])
	v := readySample[0].Value
	return v.Kind() != metrics.KindUint64 || v.Uint64() > 0
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
	if now.Sub(p.gosched) >= goschedEvery {
		p.gosched = now
		if othersReady() {
			runtime.Gosched()
			p.gosched = time.Now()
			p.last, p.seen = p.gosched, -1 // the goroutine may go on on another thread
			return true
		}
	}
	if now.Sub(p.last) < time.Duration(span.Load()) {
		return true
	}
	switched := p.yield()
	p.last = time.Now()
	paceMu.Lock()
	pace = pace.next(switched)
	span.Store(int64(pace.span))
	paceMu.Unlock()
	return true
}

// yield gives the processor to other threads for a moment and reports
// whether the kernel ran another one on this thread's core since the last
// yield: the thread's count of context switches moved (a sched_yield that
// runs another thread counts as involuntary, as does a preemption of the
// spin before it). The goroutine stays on its thread between two counts
// (raw system calls keep the P, and Next forgets the count when it calls
// Gosched); a rare preemption between them only makes this yield look
// like one that ran another thread.
func (p *Poller) yield() (switched bool) {
	before := p.seen
	if before < 0 {
		before = switches()
	}
	_, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	p.seen = switches()
	return before >= 0 && p.seen >= 0 && p.seen != before
}

// switches is the calling thread's count of context switches, voluntary or
// not, or -1 if the kernel cannot tell.
func switches() int64 {
	var ru unix.Rusage
	if _, _, e := unix.RawSyscall(unix.SYS_GETRUSAGE, uintptr(unix.RUSAGE_THREAD), uintptr(unsafe.Pointer(&ru)), 0); e != 0 {
		return -1
	}
	return ru.Nvcsw + ru.Nivcsw
}
