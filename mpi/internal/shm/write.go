package shm

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"
)

// Records (the layout in ring.go). A record's size is its control word
// and payload rounded up to a line; the writer keeps one more line free
// for the next record's control word, which it zeroes.

// maxRecord is the most payload a record carries: a quarter of the ring,
// so a reader copies one out while the writer fills the next.
func (r *Ring) maxRecord() uint64 { return uint64(len(r.data))/4 - 8 }

// recordSize is the bytes a record of n bytes of payload takes.
func recordSize(n uint64) uint64 { return (8 + n + line - 1) &^ (line - 1) }

// ctrl is the control word of the record at stream position p (a multiple
// of line).
func (r *Ring) ctrl(p uint64) *uint64 { return (*uint64)(unsafe.Pointer(&r.data[p&r.mask])) }

// ctrlWord is the control word of a record at p with n bytes of payload:
// never zero, as n is not.
func ctrlWord(p, n uint64) uint64 { return uint64(uint32(p/line))<<32 | n }

// room is the payload the writer may put in one record now, by the tail
// it last saw: 0 when it must look at the tail again.
func (r *Ring) room() uint64 {
	free := uint64(len(r.data)) - (r.pos - r.seen) // (a line, 8 bytes of which are the next control word)
	if free < 2*line {
		return 0
	}
	return min(free-line-8, r.maxRecord())
}

// loadTail reads the reader's tail, refusing one that moved back, past
// the writer, or off a line.
func (r *Ring) loadTail() error {
	tail := atomic.LoadUint64(r.u64(offTail))
	if tail-r.seen > r.pos-r.seen || tail%line != 0 {
		return fmt.Errorf("%w: reader at %d, writer at %d", ErrCorrupt, tail, r.pos)
	}
	r.seen = tail
	return nil
}

// closed reports whether the reader is gone.
func (r *Ring) closed() bool { return atomic.LoadUint32(r.u32(offRClosed)) != 0 }

// put writes a record of a then b (at most room() bytes in all) and
// publishes it: the next record's control word is zeroed first, so the
// reader never finds a stale one there.
func (r *Ring) put(a, b []byte) {
	n := uint64(len(a) + len(b))
	p := r.pos
	q := p + recordSize(n)
	// The zero is ordered before the control word below, which the
	// reader acquires; most records do not wrap.
	*r.ctrl(q) = 0
	if at := (p + 8) & r.mask; at+n <= uint64(len(r.data)) {
		copy(r.data[at:], a)
		copy(r.data[at+uint64(len(a)):], b)
	} else {
		r.copyIn(p+8, a)
		r.copyIn(p+8+uint64(len(a)), b)
	}
	atomic.StoreUint64(r.ctrl(p), ctrlWord(p, n))
	r.pos = q
}

// copyIn copies b into the data at stream position p, wrapping at the end.
func (r *Ring) copyIn(p uint64, b []byte) {
	for len(b) > 0 {
		k := copy(r.data[p&r.mask:], b)
		p += uint64(k)
		b = b[k:]
	}
}

// Write copies all of p into the ring, in records of the room there is,
// waiting for room as long as check returns nil. It returns ErrCorrupt if
// the reader's published position is impossible. When the reader is gone
// (CloseRead), the data is dropped.
func (r *Ring) Write(p []byte, check func() error) error {
	for len(p) > 0 {
		n, err := r.waitRoom(check)
		if err != nil || n == 0 { // (0: the reader is gone)
			return err
		}
		n = min(n, uint64(len(p)))
		r.put(p[:n], nil)
		p = p[n:]
		r.wake()
	}
	return nil
}

// waitRoom returns the room for a record, reading the tail only when the
// room last seen is used up, and waiting (poll, then futex) when it still
// is; 0 when the reader is gone. While there is room the writer does not
// look whether the reader is gone (a line the reader writes when its state
// changes): what it writes then is dropped as surely.
func (r *Ring) waitRoom(check func() error) (uint64, error) {
	if n := r.room(); n > 0 {
		return n, nil
	}
	var n uint64
	ready := func() (bool, error) {
		if r.closed() {
			n = 0
			return true, nil
		}
		if err := r.loadTail(); err != nil {
			return false, err
		}
		n = r.room()
		return n > 0, nil
	}
	err := r.wait(offTail, r.armWriter, r.disarmWriter, true, ready, check)
	return n, err
}

// WriteFrame writes hdr then data, as one record when they fit the room
// there is now: a small message costs the reader one record to find.
func (r *Ring) WriteFrame(hdr, data []byte, check func() error) error {
	n := uint64(len(hdr) + len(data))
	if n > r.room() {
		if err := r.loadTail(); err != nil {
			return err
		}
	}
	if n > r.room() {
		if err := r.Write(hdr, check); err != nil { // no room: the general path
			return err
		}
		return r.Write(data, check)
	}
	r.put(hdr, data)
	r.wakeSoon()
	return nil
}

// wake wakes the read side if its flag says it sleeps. The count moves
// first, so a sleeper that read it before arming does not sleep.
func (r *Ring) wake() {
	if atomic.LoadUint32(r.u32(offRSleep)) != 0 {
		r.WakeReader()
	}
}

// WakeReader wakes the read side (a reader sleeping in Read runs its check
// at once).
func (r *Ring) WakeReader() {
	atomic.AddUint32(r.u32(offWake), 1)
	futexWake(r.u32(offWake))
}

// wakeGrace is how long the writer of a whole frame waits for the read
// side to start polling before it wakes it (wakeSoon): a receiver between
// two receives of a ping-pong (its last poll over, its next one about to
// start) is back within a microsecond, and waking it would cost a system
// call here and a thread woken there, which on a small machine preempts
// one of the two polling ranks.
const wakeGrace = time.Microsecond

// wakeSoon wakes the read side for a frame just published, unless its flag
// clears within wakeGrace (a poll began: it reads the frame). Looking at
// the flag later than right after the record was published is as safe as
// looking at once: the reader arms the flag before it looks for data.
func (r *Ring) wakeSoon() {
	flag := r.u32(offRSleep)
	var start time.Time
	for i := 1; atomic.LoadUint32(flag) != 0; i++ {
		if i%64 != 0 {
			continue
		}
		if start.IsZero() {
			start = time.Now()
		} else if time.Since(start) > wakeGrace {
			r.WakeReader()
			return
		}
	}
}

// The writer's flag: only one goroutine writes at a time.
func (r *Ring) armWriter()    { atomic.StoreUint32(r.u32(offWSleep), 1) }
func (r *Ring) disarmWriter() { atomic.StoreUint32(r.u32(offWSleep), 0) }
