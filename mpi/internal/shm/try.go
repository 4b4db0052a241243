package shm

import (
	"errors"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Moving bytes without waiting, and one wait for several rings: what a
// goroutine that drives many rings at once needs (the library's exchange
// engine, mpi/shm_engine.go). It reads what its in rings hold and writes
// what its out rings have room for, and when none moves it sleeps until
// any of them changes (Sleep), on one thread, as one process of Open MPI
// progresses all its transfers: no standby reader and no writer goroutine
// to hand a message over to, which on a machine with more ranks than
// cores costs a wake-up of another thread each time (BENCHMARKS.md).
// The caller holds the right to read every ring it reads and
// is the only writer of every ring it writes.

// TryRead copies into p what the ring holds now, at most the rest of the
// record being read, without waiting: 0 when there is nothing. It returns
// ErrCorrupt if the control word of the next record is impossible.
func (r *Ring) TryRead(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if r.rem == 0 {
		c := atomic.LoadUint64(r.ctrl(r.next))
		if c == 0 {
			return 0, nil
		}
		if err := r.begin(c); err != nil {
			return 0, err
		}
	}
	return r.take(p), nil
}

// TryWrite copies into the ring as much of a then b as there is room for
// now, in records, without waiting, wakes the reader if it sleeps, and
// returns how many bytes it took. When the reader is gone (CloseRead) it
// takes them all: they are dropped, as Write drops them. It returns
// ErrCorrupt if the reader's published position is impossible.
func (r *Ring) TryWrite(a, b []byte) (int, error) {
	if r.closed() {
		return len(a) + len(b), nil
	}
	took := 0
	for len(a)+len(b) > 0 {
		n := r.room()
		if n == 0 {
			if err := r.loadTail(); err != nil {
				return took, err
			}
			if n = r.room(); n == 0 {
				break
			}
		}
		ka := min(n, uint64(len(a)))
		kb := min(n-ka, uint64(len(b)))
		r.put(a[:ka], b[:kb])
		a, b = a[ka:], b[kb:]
		took += int(ka + kb)
	}
	if took > 0 {
		r.wake()
	}
	return took, nil
}

// readable is whether TryRead would find bytes now.
func (r *Ring) readable() bool {
	return r.rem > 0 || atomic.LoadUint64(r.ctrl(r.next)) != 0
}

// writable is whether TryWrite would take bytes now (or the reader is
// gone). It may read the tail.
func (r *Ring) writable() (bool, error) {
	if r.room() > 0 || r.closed() {
		return true, nil
	}
	if err := r.loadTail(); err != nil {
		return false, err
	}
	return r.room() > 0, nil
}

// Sleep waits until one of reads holds data, one of writes has room, or d
// has passed, whichever is first, without spinning: it tells each ring's
// peer that this side sleeps (as Read and Write do when they wait) and
// sleeps on all their futexes at once (futex_waitv, Linux 5.16). A kernel
// without it makes Sleep wait on the first ring's futex alone for at most
// sleepFallback, so a change on another ring is seen that late. Sleep may
// return early; the caller looks again. An impossible tail on a write
// ring is ErrCorrupt.
func Sleep(reads, writes []*Ring, d time.Duration) error {
	n := len(reads) + len(writes)
	if n == 0 {
		time.Sleep(d)
		return nil
	}
	if n > MaxSleepRings {
		return errors.New("shm: Sleep on too many rings")
	}
	var ws [MaxSleepRings]futexWaitv
	var first *uint32 // the word a kernel without futex_waitv sleeps on
	add := func(i int, word *uint32) {
		ws[i] = futexWaitv{val: uint64(atomic.LoadUint32(word)), uaddr: uint64(uintptr(unsafe.Pointer(word))), flags: futex2SizeU32}
		if i == 0 {
			first = word
		}
	}
	for i, r := range reads {
		r.count(&r.sleepers, 1)
		add(i, r.u32(offWake))
	}
	for i, r := range writes {
		r.armWriter()
		add(len(reads)+i, r.u32(offTail))
	}
	defer func() {
		for _, r := range reads {
			r.count(&r.sleepers, -1)
		}
		for _, r := range writes {
			r.disarmWriter()
		}
	}()
	// Armed, look once more: a peer that moved before it saw the flag
	// does not wake us, and the values above make one that moved after
	// it end the wait at once.
	for _, r := range reads {
		if r.readable() {
			return nil
		}
	}
	for _, r := range writes {
		if ok, err := r.writable(); ok || err != nil {
			return err
		}
	}
	// The rings of one process sleep alike (CapPolls): the first tells.
	lead := writes
	if len(reads) > 0 {
		lead = reads
	}
	futexWaitAny(ws[:n], first, d, lead[0].sleepsAtOnce())
	return nil
}

// MaxSleepRings bounds the rings of one Sleep (futex_waitv takes at most
// 128 words).
const MaxSleepRings = 128

// futexWaitv is the kernel's struct futex_waitv.
type futexWaitv struct {
	val   uint64
	uaddr uint64
	flags uint32
	_     uint32
}

// futex2SizeU32: the word is 32 bits, shared between processes (no
// FUTEX2_PRIVATE).
const futex2SizeU32 = 0x02

// sleepFallback bounds a Sleep on a kernel without futex_waitv.
const sleepFallback = time.Millisecond

// noWaitv is set once futex_waitv was found missing.
var noWaitv atomic.Bool

// futexWaitAny sleeps until a word of ws no longer holds its value, one
// is woken, or d has passed. first is ws[0]'s word, the one a kernel
// without futex_waitv sleeps on. handoff is futexWait's.
func futexWaitAny(ws []futexWaitv, first *uint32, d time.Duration, handoff bool) {
	if !noWaitv.Load() {
		var now unix.Timespec
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) == nil {
			ts := unix.NsecToTimespec(now.Nano() + int64(d))
			_, _, e := sleepSyscall6(handoff, unix.SYS_FUTEX_WAITV, uintptr(unsafe.Pointer(&ws[0])), uintptr(len(ws)), 0,
				uintptr(unsafe.Pointer(&ts)), uintptr(unix.CLOCK_MONOTONIC), 0)
			runtime.KeepAlive(ws)
			runtime.KeepAlive(&ts)
			if e != unix.ENOSYS {
				return
			}
			noWaitv.Store(true)
		}
	}
	futexWait(first, uint32(ws[0].val), min(d, sleepFallback), handoff)
}
