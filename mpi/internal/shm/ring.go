// Package shm is a single-writer, single-reader byte ring in shared memory:
// the channel two rank processes on one machine use instead of their agent,
// with the completion word of single-copy transfers beside it (cma.go).
// The agent creates each ring as a sealed memfd (Create) and passes it to
// its writer and its reader over their unix sockets; each maps it (Map).
//
// Neither side trusts the other: everything read from shared memory is
// checked (a tail that moves backwards or past the writer, a record's
// control word with another position's tag or an impossible length, is an
// error, never an out-of-bounds access), the memfd is sealed against
// shrinking so a peer cannot make the mapping fault, and every wait is
// bounded so a dead or silent peer is noticed by the caller's own checks.
//
// A message moves as few cache lines between the two processes as it can
// (the layout below): the reader polls the control word of the next
// record in the data itself, the writer reads the tail only when its room
// runs short, and each side's sleep flag sits where the other side writes
// only when it goes to sleep. Waiting is a short poll, then a futex wait,
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
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Layout of a ring file: a header page, then the data. Each line of the
// header is written by one side only: 64 by the writer when it sleeps or
// wakes the reader, 128 by the reader at the end of each record, 192 by
// the reader when its state changes. So a message's writer reads only
// 192 (a cache hit while the reader's state stays), its reader only the
// data.
//
//	off  size
//	  0  u32  magic "ZSHM"
//	  4  u32  layout version (3)
//	  8  u64  data capacity in bytes (a power of two)
//	 64  u32  the writer sleeps waiting for room
//	 68  u32  the writer sleeps waiting for a rendezvous' completion (cma.go)
//	 72  u64  the writer's identity word, read by the reader through the writer's memory (cma.go)
//	 80  u32  wake count: the read side's futex, which the writer moves when it wakes it
//	128  u64  tail: bytes read so far (reader only, at a record's end); its low word is the writer's futex
//	192  u32  the reader sleeps waiting for data
//	196  u32  the reader is gone (finalized): the writer drops what it writes
//	200  u64  completion: token<<1 | refused of the last rendezvous done (reader only); a futex
//	4096 ...  data: records
//
// The data is a sequence of records, each at a multiple of 64 bytes: a
// control word (tag<<32 | n, tag the low 32 bits of the record's position
// over 64, n its payload bytes), the payload, padding to the next line. The
// reader polls the control word where the next record will be (zero: not
// yet), so a small message moves one line of the ring and no header line:
// the writer zeroes the next record's control word before it publishes
// this one's, so what the reader finds there is never a stale record or a
// payload of an earlier lap. The writer reads the tail only when the room
// it last saw runs short.
//
// Version 3 replaced a head position with the control words, and moved
// the flags off the position lines. Version 2 added the single-copy
// rendezvous (cma.go). A process of another version would misread the
// ring, so Map refuses it, with both numbers in the error.
const (
	HeaderSize = 4096
	magic      = 0x4d48535a // "ZSHM" little-endian
	layout     = 3

	offMagic   = 0
	offVersion = 4
	offCap     = 8
	offWSleep  = 64
	offASleep  = 68
	offIdent   = 72
	offWake    = 80
	offTail    = 128
	offRSleep  = 192
	offRClosed = 196
	offAck     = 200

	// line is the alignment of records: a control word and up to
	// line-8 bytes of payload share one cache line.
	line = 64

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

	// The writer's state: where its next record goes, and the tail it
	// last read (which may only move up to pos).
	pos, seen uint64

	// The reader's state (whoever holds the right to read): where the
	// next byte of the record being read is, how many are left, and where
	// the next record starts (the tail, once this one is read).
	at, rem, next uint64

	// The read side's sleepers: whether the writer must wake the read side
	// is computed from them under wmu (setReadFlag).
	wmu      sync.Mutex
	sleepers int // goroutines in Read asleep (they must be woken)
	standby  int // goroutines in WaitData asleep (woken only when nobody polls)
	watchers int // goroutines polling the ring (Watch)

	token uint64 // the writer's last rendezvous token (cma.go)

	// A cap on this side's polls (CapPolls), set before the ring is used.
	pollCap time.Duration
	capped  bool
}

// CapPolls caps every poll of this side's waits at d: on a host with more
// ranks than cores a process should sleep at once rather than poll, as the
// core it would poll on is the one its peer needs to write, and a poll's
// yields do not reliably hand it over (pace.go). Call it before the ring
// is used.
func (r *Ring) CapPolls(d time.Duration) { r.pollCap, r.capped = d, true }

// sleepsAtOnce reports whether this side's polls are capped at 0: it
// sleeps at every wait, and its sleeps give up their P at once (syscall.go).
func (r *Ring) sleepsAtOnce() bool { return r.capped && r.pollCap <= 0 }

// poll starts a poll of at most limit, or of the cap.
func (r *Ring) poll(limit time.Duration) Poller {
	if r.capped {
		limit = min(limit, r.pollCap)
	}
	return StartPoll(limit)
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
