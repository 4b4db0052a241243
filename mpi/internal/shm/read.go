package shm

import (
	"fmt"
	"sync/atomic"
)

// Read copies at least one byte from the ring into p (which must not be
// empty), waiting for data as long as check returns nil. A record never
// gives more than its own payload. It returns ErrCorrupt if the control
// word of the next record is impossible.
func (r *Ring) Read(p []byte, check func() error) (int, error) {
	if r.rem == 0 {
		// The record there already (a frame's header read, its rest
		// follows, or the message came before the receive): no wait to
		// set up, no clock to read.
		c := atomic.LoadUint64(r.ctrl(r.next))
		if c == 0 {
			var err error
			if c, err = r.waitRecord(check); err != nil {
				return 0, err
			}
		}
		if err := r.begin(c); err != nil {
			return 0, err
		}
	}
	return r.take(p), nil
}

// waitRecord waits for the control word of the next record.
func (r *Ring) waitRecord(check func() error) (uint64, error) {
	var c uint64
	ready := func() (bool, error) {
		c = atomic.LoadUint64(r.ctrl(r.next))
		return c != 0, nil
	}
	err := r.wait(offWake, func() { r.count(&r.sleepers, 1) }, func() { r.count(&r.sleepers, -1) }, true, ready, check)
	return c, err
}

// begin starts reading the record whose control word is c, at next.
func (r *Ring) begin(c uint64) error {
	n := c & (1<<32 - 1)
	if uint32(c>>32) != uint32(r.next/line) || n == 0 || n > r.maxRecord() {
		return fmt.Errorf("%w: record of %d bytes tagged %d at %d", ErrCorrupt, n, c>>32, r.next)
	}
	r.at, r.rem = r.next+8, n
	r.next += recordSize(n)
	r.prefetchNext()
	return nil
}

// take copies into p what it can of the record being read, and at its end
// publishes the tail (and wakes the writer if it sleeps for room).
func (r *Ring) take(p []byte) int {
	n := min(uint64(len(p)), r.rem)
	if at := r.at & r.mask; at+n <= uint64(len(r.data)) { // (most records do not wrap)
		copy(p[:n], r.data[at:at+n])
	} else {
		for k := uint64(0); k < n; {
			k += uint64(copy(p[k:n], r.data[(r.at+k)&r.mask:]))
		}
	}
	r.at += n
	r.rem -= n
	if r.rem == 0 {
		atomic.StoreUint64(r.u64(offTail), r.next)
		r.wakeIf(offTail, offWSleep)
	}
	return int(n)
}

// Rest is how many bytes of the record being read are left: a read of at
// most that many does not wait.
func (r *Ring) Rest() int { return int(r.rem) }

// Pending reports whether the writer has published data not yet read:
// whether the record at the tail has a control word (the tail moves past a
// record once it is read whole, so a record partly read counts). It is a
// hint, for goroutines outside the right to read: the control word may be
// garbage, or read where the holder of the right to read just was; the
// read itself checks.
func (r *Ring) Pending() bool {
	return atomic.LoadUint64(r.ctrl(atomic.LoadUint64(r.u64(offTail)))) != 0
}

// WaitData waits, without reading, until the ring holds data (as Pending
// says), check fails, or a watcher leaves: the standby reader's wait. It
// spins first only while nobody polls the ring. The read that follows
// checks what the writer published.
func (r *Ring) WaitData(check func() error) error {
	ready := func() (bool, error) { return r.Pending(), nil }
	r.wmu.Lock()
	spin := r.watchers == 0
	r.wmu.Unlock()
	return r.wait(offWake, func() { r.count(&r.standby, 1) }, func() { r.count(&r.standby, -1) }, spin, ready, check)
}

// setReadFlag publishes whether the writer must wake the read side, when
// that changes: the writer reads the flag's line after every record, and
// a store there, even of the same value, would move it. wmu is held.
func (r *Ring) setReadFlag() {
	var on uint32
	if wakeReader(r.sleepers, r.standby, r.watchers) {
		on = 1
	}
	if flag := r.u32(offRSleep); atomic.LoadUint32(flag) != on {
		atomic.StoreUint32(flag, on)
	}
}

// wakeReader is whether the writer must wake the read side: a Read sleeps
// (it holds the right to read, mid-frame), or the standby reader sleeps and
// no goroutine polls the ring in its place.
func wakeReader(sleepers, standby, watchers int) bool {
	return sleepers > 0 || (standby > 0 && watchers == 0)
}

// count counts a read-side sleeper (or watcher) in or out.
func (r *Ring) count(n *int, d int) {
	r.wmu.Lock()
	*n += d
	r.setReadFlag()
	r.wmu.Unlock()
}

// Watch tells the ring a goroutine of this process polls it (with
// Pending) and will read what comes: the writer no longer wakes the
// standby reader. Every Watch is followed by one Unwatch.
func (r *Ring) Watch() { r.count(&r.watchers, 1) }

// Unwatch ends a Watch. When the last watcher leaves with data unread, a
// sleeping standby reader is woken to read it.
func (r *Ring) Unwatch() {
	r.wmu.Lock()
	r.watchers--
	r.setReadFlag()
	wake := r.watchers == 0 && r.standby > 0 // (one that arms later checks for data itself)
	r.wmu.Unlock()
	if wake && r.Pending() {
		r.WakeReader()
	}
}

// CloseRead tells the writer the reader is gone: it drops what it writes
// from then on instead of waiting for room.
func (r *Ring) CloseRead() {
	atomic.StoreUint32(r.u32(offRClosed), 1)
	futexWake(r.u32(offTail))
	futexWake(r.u32(offAck))
}
