package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The shm relay chain's rings. A rank and its relay share two of them, one
// each way, in memory the relay creates (a memfd, passed over a unix
// socket as the agent passes the co-located ranks' rings). The ring is a
// plain byte ring, not mpi/internal/shm's: that package is internal to mpi
// (testnet cannot import it), and its API copies on both sides (Read into
// the caller's buffer, Write from it), while the relay must hand the
// stream a slice of the ring itself and read the stream into the ring
// (peek and commit), so that the only copies between the two ranks are
// the ranks' own and what TLS and yamux do.
//
// Layout: a header page, then the data. Each line of the header is
// written by one side only; the sleep flags sit on lines written only
// when a side goes to sleep or wakes, so a side reads the other's flag
// line from its cache while the state stays.
//
//	off  size
//	  0  u32  magic "ZBSR"
//	  8  u64  data capacity (a power of two)
//	 64  u64  head: bytes written (writer); its low word is the reader's futex
//	128  u64  tail: bytes read (reader); its low word is the writer's futex
//	192  u32  the reader sleeps waiting for data; 196 u32: the reader is gone
//	256  u32  the writer sleeps waiting for room; 260 u32: the writer closed
//	4096 ...  data
const (
	ringHeader  = 4096
	ringMagic   = 0x5253425a // "ZBSR" little-endian
	offRingCap  = 8
	offHead     = 64
	offTail     = 128
	offRSleep   = 192
	offRGone    = 196
	offWSleep   = 256
	offWClosed  = 260
	ringCapMin  = 4 << 10
	ringCapMax  = 64 << 20
	ringMaxNap  = 100 * time.Millisecond // a sleep's bound: the peer's liveness is checked after it
	ringYieldAt = 64                     // a poll looks this many times between clock reads and yields
)

// shmRingCap is the data capacity of each ring of the chain: as much as the
// relay chain's unix sockets ask the kernel to buffer (unixSocketBuffer).
const shmRingCap = unixSocketBuffer

// shmPublish is the most a rank copies into a ring before it publishes
// it: the relay starts sending the first bytes of a large message while
// the rest are copied in (cut-through, as the unix socket's skbs allow).
const shmPublish = 64 << 10

// errRingPeerGone: the process on the other side of the ring closed its
// unix socket (or died) while this side waited.
var errRingPeerGone = errors.New("bench: the ring's peer is gone")

// createRing makes a ring file of capacity bytes of data: a memfd sealed
// against shrinking, so the peer's mapping cannot fault.
func createRing(name string, capacity int) (*os.File, error) {
	if capacity < ringCapMin || capacity > ringCapMax || capacity&(capacity-1) != 0 {
		return nil, fmt.Errorf("ring capacity %d: want a power of two in [%d, %d]", capacity, ringCapMin, ringCapMax)
	}
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd:"+name)
	if err := unix.Ftruncate(fd, int64(ringHeader+capacity)); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("size ring: %w", err)
	}
	var hdr [16]byte
	binary.LittleEndian.PutUint32(hdr[0:], ringMagic)
	binary.LittleEndian.PutUint64(hdr[offRingCap:], uint64(capacity))
	if _, err := unix.Pwrite(fd, hdr[:], 0); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("write ring header: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("seal ring: %w", err)
	}
	return f, nil
}

// shmRing is one side's mapping of a ring: its reader's or its writer's.
// Each side is used by one goroutine at a time.
type shmRing struct {
	mem, data []byte
	mask      uint64
	poll      time.Duration // how long a wait polls before it sleeps
	gone      <-chan struct{}

	// The writer's: bytes written, and the tail it last saw.
	head, seenTail uint64
	// The reader's: bytes read, and the head it last saw.
	tail, seenHead uint64
}

// mapRing checks and maps a ring file (which may be closed afterwards). A
// wait polls for poll, then sleeps; it gives up once gone is closed.
func mapRing(fd int, poll time.Duration, gone <-chan struct{}) (*shmRing, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("ring: %w", err)
	}
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil || seals&unix.F_SEAL_SHRINK == 0 {
		return nil, fmt.Errorf("ring: not sealed against shrinking (%v)", err)
	}
	capacity := st.Size - ringHeader
	if capacity < ringCapMin || capacity > ringCapMax || capacity&(capacity-1) != 0 {
		return nil, fmt.Errorf("ring: file of %d bytes", st.Size)
	}
	// Populated at once: the first trial of a size would otherwise pay
	// the page faults.
	mem, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("ring: mmap: %w", err)
	}
	r := &shmRing{mem: mem, data: mem[ringHeader:], mask: uint64(capacity - 1), poll: poll, gone: gone}
	if binary.LittleEndian.Uint32(mem) != ringMagic || binary.LittleEndian.Uint64(mem[offRingCap:]) != uint64(capacity) {
		r.unmap()
		return nil, errors.New("ring: bad header")
	}
	return r, nil
}

func (r *shmRing) unmap() {
	if r.mem != nil {
		_ = unix.Munmap(r.mem)
		r.mem, r.data = nil, nil
	}
}

func (r *shmRing) u64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[off])) }
func (r *shmRing) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&r.mem[off])) }

// readable returns the bytes the writer has published and this side has
// not consumed, up to the end of the data (the rest follows the next
// time), waiting for some. It returns io.EOF once the writer has closed
// and everything is read.
func (r *shmRing) readable() ([]byte, error) {
	var closed bool
	ready := func() (bool, error) {
		// The flag first: once it is seen, the head read after it is
		// the last.
		closed = atomic.LoadUint32(r.u32(offWClosed)) != 0
		if r.seenHead = atomic.LoadUint64(r.u64(offHead)); r.seenHead != r.tail {
			if r.seenHead-r.tail > uint64(len(r.data)) {
				return false, fmt.Errorf("ring: writer at %d, reader at %d", r.seenHead, r.tail)
			}
			return true, nil
		}
		return closed, nil
	}
	if r.seenHead == r.tail {
		if err := r.wait(offHead, offRSleep, ready); err != nil {
			return nil, err
		}
		if r.seenHead == r.tail && closed {
			return nil, io.EOF
		}
	}
	at := r.tail & r.mask
	return r.data[at:min(uint64(len(r.data)), at+r.seenHead-r.tail)], nil
}

// consume gives n bytes of what readable returned back to the writer.
func (r *shmRing) consume(n int) {
	r.tail += uint64(n)
	atomic.StoreUint64(r.u64(offTail), r.tail)
	if atomic.LoadUint32(r.u32(offWSleep)) != 0 {
		futexWake(r.u32(offTail))
	}
}

// Read copies into p what the ring holds, waiting for at least a byte.
func (r *shmRing) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b, err := r.readable()
	if err != nil {
		return 0, err
	}
	n := copy(p, b)
	r.consume(n)
	return n, nil
}

// writable returns the free room of the ring, up to the end of the data,
// waiting for some. It fails when the reader is gone.
func (r *shmRing) writable() ([]byte, error) {
	free := func() uint64 { return uint64(len(r.data)) - (r.head - r.seenTail) }
	ready := func() (bool, error) {
		if atomic.LoadUint32(r.u32(offRGone)) != 0 {
			return false, errRingPeerGone
		}
		tail := atomic.LoadUint64(r.u64(offTail))
		if tail-r.seenTail > r.head-r.seenTail {
			return false, fmt.Errorf("ring: reader at %d, writer at %d", tail, r.head)
		}
		r.seenTail = tail
		return free() > 0, nil
	}
	if free() == 0 {
		if err := r.wait(offTail, offWSleep, ready); err != nil {
			return nil, err
		}
	}
	at := r.head & r.mask
	return r.data[at:min(uint64(len(r.data)), at+free())], nil
}

// commit publishes n bytes written into what writable returned.
func (r *shmRing) commit(n int) {
	r.head += uint64(n)
	atomic.StoreUint64(r.u64(offHead), r.head)
	if atomic.LoadUint32(r.u32(offRSleep)) != 0 {
		futexWake(r.u32(offHead))
	}
}

// Write copies p into the ring, publishing every shmPublish bytes.
func (r *shmRing) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		b, err := r.writable()
		if err != nil {
			return done, err
		}
		n := copy(b[:min(len(b), shmPublish)], p[done:])
		r.commit(n)
		done += n
	}
	return done, nil
}

// closeWrite tells the reader no more bytes come: it reads io.EOF after
// the last.
func (r *shmRing) closeWrite() {
	atomic.StoreUint32(r.u32(offWClosed), 1)
	futexWake(r.u32(offHead))
}

// closeRead tells the writer this side reads no more: its writes fail.
func (r *shmRing) closeRead() {
	atomic.StoreUint32(r.u32(offRGone), 1)
	futexWake(r.u32(offTail))
}

// wakeSelf ends this side's sleep (the peer is gone: it looks at gone).
func (r *shmRing) wakeSelf() {
	futexWake(r.u32(offHead))
	futexWake(r.u32(offTail))
}

// wait returns once ready says so or fails, or with errRingPeerGone. It
// polls for r.poll, giving the core away every ringYieldAt looks (on two
// cores the peer that will write may need this one), then sleeps on the
// futex word at word with its flag at flag raised, so the peer wakes it
// only when it sleeps. ready is evaluated after the flag is raised: the
// sequentially consistent atomics make a peer that published before it
// looked at the flag visible here.
func (r *shmRing) wait(word, flag int, ready func() (bool, error)) error {
	if r.poll > 0 {
		start := time.Now()
		for i := 1; ; i++ {
			if ok, err := ready(); ok || err != nil {
				return err
			}
			if i%ringYieldAt == 0 {
				if time.Since(start) > r.poll {
					break
				}
				_, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			}
		}
	}
	for {
		seen := atomic.LoadUint32(r.u32(word))
		atomic.StoreUint32(r.u32(flag), 1)
		ok, err := ready()
		if !ok && err == nil && !r.peerGone() {
			// (a peer that goes right now is seen after the nap)
			futexWait(r.u32(word), seen, ringMaxNap)
			ok, err = ready()
		}
		atomic.StoreUint32(r.u32(flag), 0)
		if ok || err != nil {
			return err
		}
		if r.peerGone() {
			return errRingPeerGone
		}
	}
}

// peerGone reports whether the unix connection to the ring's peer ended.
func (r *shmRing) peerGone() bool {
	select {
	case <-r.gone:
		return true
	default:
		return false
	}
}

// Futex operations on a word shared between processes.
const (
	futexWaitOp = 0
	futexWakeOp = 1
)

// futexWait sleeps while *addr holds val, for at most d.
func futexWait(addr *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
	runtime.KeepAlive(&ts)
}

// futexWake wakes the sleeper on addr.
func futexWake(addr *uint32) {
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, 1, 0, 0, 0)
}
