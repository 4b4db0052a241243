// Package shm is a single-writer, single-reader byte ring in shared memory:
// the channel two rank processes on one machine use instead of their agent,
// with the completion word of single-copy transfers beside it (cma.go).
// The agent creates each ring as a sealed memfd (Create) and passes it to
// its writer and its reader over their unix sockets; each maps it (Map).
//
// Neither side trusts the other: everything read from the shared header is
// checked (a position that moves backwards or past the other's is an
// error, never an out-of-bounds access), the memfd is sealed against
// shrinking so a peer cannot make the mapping fault, and every wait is
// bounded so a dead or silent peer is noticed by the caller's own checks.
//
// Waiting is a short poll, then a futex wait on the shared position word,
// which costs no CPU; the other side wakes it only when it said it sleeps.
// The poll yields the processor as often as the machine's load asks
// (Poller, pace.go).
//
// The read side may be shared by goroutines of one process (never at the
// same time: the caller gives one of them the right to read): a standby
// reader that waits for data (WaitData) and goroutines that poll the ring
// themselves (Watch, Pending, Unwatch), such as a receive blocked on the
// ring's writer. While one polls, the standby reader sleeps without asking
// the writer to wake it, so a message costs the writer no system call and
// the receiving process no thread wake-up. A writer of a whole frame that
// finds the read side asleep gives it a moment to start polling before it
// wakes it (wakeSoon).
package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Layout of a ring file: a header page, then the data.
//
//	off  size
//	  0  u32  magic "ZSHM"
//	  4  u32  layout version (2)
//	  8  u64  data capacity in bytes (a power of two)
//	 64  u64  head: bytes written so far (writer only); its low word is the reader's futex
//	 72  u32  the writer sleeps waiting for room
//	 76  u32  the writer sleeps waiting for a rendezvous' completion (cma.go)
//	 80  u64  the writer's identity word, read by the reader through the writer's memory (cma.go)
//	128  u64  tail: bytes read so far (reader only); its low word is the writer's futex
//	136  u32  the reader sleeps waiting for data
//	140  u32  the reader is gone (finalized): the writer drops what it writes
//	144  u64  completion: token<<1 | refused of the last rendezvous done (reader only); a futex
//	4096 ...  data
//
// Version 2 added the words at 76, 80 and 144 (single-copy rendezvous):
// a process of version 1 would not answer a rendezvous, so Map refuses a
// ring of another version, with both numbers in the error.
const (
	HeaderSize = 4096
	magic      = 0x4d48535a // "ZSHM" little-endian
	layout     = 2

	offMagic   = 0
	offVersion = 4
	offCap     = 8
	offHead    = 64
	offWSleep  = 72
	offTail    = 128
	offRSleep  = 136
	offRClosed = 140
	offASleep  = 76
	offIdent   = 80
	offAck     = 144

	// MinCap and MaxCap bound a ring's data capacity.
	MinCap = 4 << 10
	MaxCap = 64 << 20
)

// Errors of a ring.
var (
	ErrCorrupt = errors.New("shm: ring corrupted by its peer")
	ErrBadRing = errors.New("shm: not a valid ring")
)

// Create makes a ring of capacity bytes of data (a power of two between
// MinCap and MaxCap) as a sealed memfd and returns it; the caller passes it
// on and closes it.
func Create(name string, capacity int) (*os.File, error) {
	if capacity < MinCap || capacity > MaxCap || capacity&(capacity-1) != 0 {
		return nil, fmt.Errorf("shm: ring capacity %d: want a power of two in [%d, %d]", capacity, MinCap, MaxCap)
	}
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("shm: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd:"+name)
	size := HeaderSize + capacity
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("shm: size ring: %w", err)
	}
	var hdr [16]byte
	binary.LittleEndian.PutUint32(hdr[offMagic:], magic)
	binary.LittleEndian.PutUint32(hdr[offVersion:], layout)
	binary.LittleEndian.PutUint64(hdr[offCap:], uint64(capacity))
	if _, err := unix.Pwrite(fd, hdr[:], 0); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("shm: write ring header: %w", err)
	}
	// Sealed, the file can neither shrink (a mapping of the lost part
	// would fault in the peer) nor grow, and the seals stay.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("shm: seal ring: %w", err)
	}
	return f, nil
}

// Ring is one side's mapping of a ring.
type Ring struct {
	mem  []byte
	data []byte
	mask uint64
	pos  uint64 // the writer's head or the reader's tail: kept here, only published to the peer
	seen uint64 // the writer's last view of the tail, which may only move up to pos

	// The read side's sleepers: whether the writer must wake the head's
	// futex is computed from them under wmu (wake below).
	wmu      sync.Mutex
	sleepers int // goroutines in Read asleep on the head (they must be woken)
	standby  int // goroutines in WaitData asleep on the head (woken only when nobody polls)
	watchers int // goroutines polling the ring (Watch)

	read atomic.Uint64 // the reader's pos, for Pending and WaitData outside the right to read

	token uint64 // the writer's last rendezvous token (cma.go)
}

// Map checks and maps a ring file received from the agent. The file may be
// closed afterwards; Unmap releases the mapping.
func Map(fd int) (*Ring, error) {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRing, err)
	}
	if seals&(unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL) != unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL {
		return nil, fmt.Errorf("%w: not sealed against shrinking", ErrBadRing)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRing, err)
	}
	capacity := st.Size - HeaderSize
	if capacity < MinCap || capacity > MaxCap || capacity&(capacity-1) != 0 {
		return nil, fmt.Errorf("%w: file of %d bytes", ErrBadRing, st.Size)
	}
	mem, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%w: mmap: %w", ErrBadRing, err)
	}
	r := &Ring{mem: mem, data: mem[HeaderSize:], mask: uint64(capacity - 1)}
	if binary.LittleEndian.Uint32(mem[offMagic:]) != magic || binary.LittleEndian.Uint64(mem[offCap:]) != uint64(capacity) {
		r.Unmap()
		return nil, fmt.Errorf("%w: bad header", ErrBadRing)
	}
	if v := binary.LittleEndian.Uint32(mem[offVersion:]); v != layout {
		r.Unmap()
		return nil, fmt.Errorf("%w: ring layout version %d, this library speaks version %d (agent and program built from different releases?)", ErrBadRing, v, layout)
	}
	return r, nil
}

// Unmap releases the mapping; the ring must not be used afterwards.
func (r *Ring) Unmap() {
	if r.mem != nil {
		_ = unix.Munmap(r.mem)
		r.mem, r.data = nil, nil
	}
}

// Cap is the ring's data capacity.
func (r *Ring) Cap() int { return len(r.data) }

func (r *Ring) u64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[off])) }
func (r *Ring) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&r.mem[off])) }

// Waiting: Poll spins this long for the peer before sleeping; a sleep lasts
// at most Nap, after which the caller's check runs again.
const (
	Poll = 50 * time.Microsecond
	Nap  = 100 * time.Millisecond
)

// wait blocks until ready reports true, check fails, or the peer's word at
// word changes while we sleep (arm tells the peer we sleep, disarm that we
// no longer do). ready is evaluated after arming, so a peer that moved
// before reading the flag is seen: the sequentially consistent atomics
// order the two sides. With spin false, wait sleeps at once.
func (r *Ring) wait(word int, arm, disarm func(), spin bool, ready func() (bool, error), check func() error) error {
	// The poll gives the processor away now and then (Poller): on a
	// machine with more runnable threads than cores, the peer that will
	// write may be the one waiting for it.
	for p := StartPoll(Poll); spin; {
		ok, err := ready()
		if ok || err != nil {
			return err
		}
		if !p.Next() {
			break
		}
	}
	for {
		seen := atomic.LoadUint32(r.u32(word))
		arm()
		ok, err := ready()
		if ok || err != nil {
			disarm()
			return err
		}
		futexWait(r.u32(word), seen, Nap)
		disarm()
		if ok, err := ready(); ok || err != nil {
			return err
		}
		if err := check(); err != nil {
			return err
		}
	}
}

// wake wakes the peer sleeping on word if its flag says it sleeps.
func (r *Ring) wake(word, flag int) {
	if atomic.LoadUint32(r.u32(flag)) != 0 {
		futexWake(r.u32(word))
	}
}

// The writer's flag: only one goroutine writes at a time.
func (r *Ring) armWriter()    { atomic.StoreUint32(r.u32(offWSleep), 1) }
func (r *Ring) disarmWriter() { atomic.StoreUint32(r.u32(offWSleep), 0) }

// setReadFlag publishes whether the writer must wake the head's futex.
// wmu is held.
func (r *Ring) setReadFlag() {
	var on uint32
	if wakeReader(r.sleepers, r.standby, r.watchers) {
		on = 1
	}
	atomic.StoreUint32(r.u32(offRSleep), on)
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
		futexWake(r.u32(offHead))
	}
}

// Pending reports whether the writer has published data not yet read. It
// is a hint (the head may be garbage): the read itself checks.
func (r *Ring) Pending() bool {
	return atomic.LoadUint64(r.u64(offHead)) != r.read.Load()
}

// WaitData waits, without reading, until the ring holds data, check fails,
// or a watcher leaves: the standby reader's wait. It spins first only while
// nobody polls the ring. It returns ErrCorrupt if the writer's published
// position is impossible.
func (r *Ring) WaitData(check func() error) error {
	size := uint64(len(r.data))
	ready := func() (bool, error) {
		// pos first: a goroutine holding the right to read may move it on
		// meanwhile, but never past the head read after it.
		pos := r.read.Load()
		head := atomic.LoadUint64(r.u64(offHead))
		if head-pos > size {
			return false, fmt.Errorf("%w: writer at %d, reader at %d", ErrCorrupt, head, pos)
		}
		return head != pos, nil
	}
	r.wmu.Lock()
	spin := r.watchers == 0
	r.wmu.Unlock()
	return r.wait(offHead, func() { r.count(&r.standby, 1) }, func() { r.count(&r.standby, -1) }, spin, ready, check)
}

// Write copies all of p into the ring, waiting for room as long as check
// returns nil. It returns ErrCorrupt if the reader's published position is
// impossible. When the reader is gone (Close), the data is dropped.
func (r *Ring) Write(p []byte, check func() error) error {
	size := uint64(len(r.data))
	for len(p) > 0 {
		var free uint64
		ready := func() (bool, error) {
			if atomic.LoadUint32(r.u32(offRClosed)) != 0 {
				return true, nil
			}
			tail := atomic.LoadUint64(r.u64(offTail))
			used := r.pos - tail
			if used > size || tail-r.seen > r.pos-r.seen { // tail ahead of head, more than a ring behind, or back
				return false, fmt.Errorf("%w: reader at %d, writer at %d", ErrCorrupt, tail, r.pos)
			}
			r.seen = tail
			free = size - used
			return free > 0, nil
		}
		if err := r.wait(offTail, r.armWriter, r.disarmWriter, true, ready, check); err != nil {
			return err
		}
		if atomic.LoadUint32(r.u32(offRClosed)) != 0 {
			return nil
		}
		at := r.pos & r.mask
		n := min(uint64(len(p)), free, size-at)
		copy(r.data[at:at+n], p[:n])
		r.pos += n
		p = p[n:]
		atomic.StoreUint64(r.u64(offHead), r.pos)
		r.wake(offHead, offRSleep)
	}
	return nil
}

// WriteFrame writes hdr then data, publishing both at once when they fit
// the room there is now: a small message costs the reader one wake-up and
// one look at the head.
func (r *Ring) WriteFrame(hdr, data []byte, check func() error) error {
	size := uint64(len(r.data))
	n := uint64(len(hdr) + len(data))
	tail := atomic.LoadUint64(r.u64(offTail))
	if used := r.pos - tail; used > size || tail-r.seen > r.pos-r.seen || size-used < n ||
		atomic.LoadUint32(r.u32(offRClosed)) != 0 {
		if err := r.Write(hdr, check); err != nil { // no room (or a bad tail): the general path
			return err
		}
		return r.Write(data, check)
	}
	r.seen = tail
	for _, p := range [][]byte{hdr, data} {
		for len(p) > 0 {
			at := r.pos & r.mask
			k := copy(r.data[at:], p)
			r.pos += uint64(k)
			p = p[k:]
		}
	}
	atomic.StoreUint64(r.u64(offHead), r.pos)
	r.wakeSoon()
	return nil
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
// the flag later than right after the head moved is as safe as looking at
// once: the reader arms the flag before it checks the head.
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
			futexWake(r.u32(offHead))
			return
		}
	}
}

// Read copies at least one byte from the ring into p (which must not be
// empty), waiting for data as long as check returns nil.
func (r *Ring) Read(p []byte, check func() error) (int, error) {
	size := uint64(len(r.data))
	// Data already there (a frame's header read, its rest follows): no
	// wait to set up, no clock to read.
	if avail := atomic.LoadUint64(r.u64(offHead)) - r.pos; avail-1 < size {
		return r.take(p, avail), nil
	}
	var avail uint64
	ready := func() (bool, error) {
		head := atomic.LoadUint64(r.u64(offHead))
		avail = head - r.pos
		if avail > size {
			return false, fmt.Errorf("%w: writer at %d, reader at %d", ErrCorrupt, head, r.pos)
		}
		return avail > 0, nil
	}
	if err := r.wait(offHead, func() { r.count(&r.sleepers, 1) }, func() { r.count(&r.sleepers, -1) }, true, ready, check); err != nil {
		return 0, err
	}
	return r.take(p, avail), nil
}

// take copies into p what it can of the avail bytes (0 < avail <= the
// capacity) that are there to read, and publishes the new tail.
func (r *Ring) take(p []byte, avail uint64) int {
	at := r.pos & r.mask
	n := min(uint64(len(p)), avail, uint64(len(r.data))-at)
	copy(p[:n], r.data[at:at+n])
	r.pos += n
	r.read.Store(r.pos)
	atomic.StoreUint64(r.u64(offTail), r.pos)
	r.wake(offTail, offWSleep)
	return int(n)
}

// CloseRead tells the writer the reader is gone: it drops what it writes
// from then on instead of waiting for room.
func (r *Ring) CloseRead() {
	atomic.StoreUint32(r.u32(offRClosed), 1)
	futexWake(r.u32(offTail))
	futexWake(r.u32(offAck))
}

// Futex operations on a shared (not process-private) word.
const (
	futexWaitOp = 0
	futexWakeOp = 1
)

func futexWait(addr *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes every sleeper on addr: the read side may have two (a
// Read and the standby reader).
func futexWake(addr *uint32) {
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, 1<<30, 0, 0, 0)
}

// WakeReader wakes a reader sleeping in Read, so it runs its check at once.
func (r *Ring) WakeReader() { futexWake(r.u32(offHead)) }
