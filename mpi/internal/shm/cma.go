package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Single-copy transfers ("cross memory attach", as Open MPI's CMA path):
// for a large message the writer puts only a small rendezvous in the ring
// (its pid, the address and length of its buffer, a token), the reader
// copies the data straight out of the writer's memory with
// process_vm_readv (ReadFrom), then publishes the token as done (Ack); the
// writer waits for that (WaitAck) before its buffer may change. The frame
// itself is the caller's (mpi/internal/proto); the ring only carries the
// completion word and the writer's identity word.
//
// The identity word proves that the pid named in a rendezvous is the
// process that writes this ring (CheckWriter): the reader reads the word
// through that pid's memory at the address the writer gave, and compares
// it with what it sees in its own mapping of the same page. A pid of
// another namespace, or a stale one, fails the check instead of making the
// reader copy another process's memory.

// Errors of a single-copy read.
var (
	// ErrPeerGone: the process named is gone (ESRCH).
	ErrPeerGone = errors.New("shm: peer process gone")
	// ErrNoCMA: this kernel or its policy does not let this process read
	// the peer's memory (EPERM, EACCES: ptrace rules, other uid; ENOSYS).
	ErrNoCMA = errors.New("shm: reading the peer's memory is not allowed here")
	// ErrNotWriter: the process named does not map this ring as its writer.
	ErrNotWriter = errors.New("shm: the process named is not the ring's writer")
)

// Ident returns the address, in this process, of the ring's identity word,
// which it sets to a random value on first use. The writer calls it.
func (r *Ring) Ident() uint64 {
	p := r.u64(offIdent)
	if atomic.LoadUint64(p) == 0 {
		atomic.StoreUint64(p, rand.Uint64()|1)
	}
	return uint64(uintptr(unsafe.Pointer(p)))
}

// CheckWriter checks, on the reader's side, that process pid maps this ring
// at addr: the identity word read there through pid's memory is the one
// this mapping holds.
func (r *Ring) CheckWriter(pid int, addr uint64) error {
	var b [8]byte
	if err := ReadFrom(pid, addr, b[:]); err != nil {
		return err
	}
	want := atomic.LoadUint64(r.u64(offIdent))
	if got := binary.NativeEndian.Uint64(b[:]); want == 0 || got != want {
		return fmt.Errorf("%w: pid %d holds %#x at %#x, the ring %#x", ErrNotWriter, pid, got, addr, want)
	}
	return nil
}

// NextToken returns the writer's next rendezvous token: 1, 2, and so on.
func (r *Ring) NextToken() uint64 {
	r.token++
	return r.token
}

// Ack publishes that the reader is done with rendezvous token: ok false
// asks the writer to send the message through the ring instead.
func (r *Ring) Ack(token uint64, ok bool) {
	v := token << 1
	if !ok {
		v |= 1
	}
	atomic.StoreUint64(r.u64(offAck), v)
	r.wakeIf(offAck, offASleep)
}

// WaitAck waits until the reader is done with rendezvous token (the last
// one the writer sent), as long as check returns nil. It polls for up to
// spin first (the time the reader's copy should take: a writer copying
// through the ring would be busy that long too), then sleeps on the
// futex; on a loaded machine a sleeper woken at the end of a copy waits
// for a core, which made a 1 MiB ping-pong 4x slower. ok is false when
// the reader refused it. A reader that is gone (CloseRead) counts as
// done: the message is dropped, as Write drops data. A completion word
// that names another rendezvous is ErrCorrupt.
func (r *Ring) WaitAck(token uint64, spin time.Duration, check func() error) (ok bool, err error) {
	ready := func() (bool, error) {
		if atomic.LoadUint32(r.u32(offRClosed)) != 0 {
			ok = true
			return true, nil
		}
		v := atomic.LoadUint64(r.u64(offAck))
		switch t := v >> 1; t {
		case token:
			ok = v&1 == 0
			return true, nil
		case token - 1:
			return false, nil
		default:
			return false, fmt.Errorf("%w: completion of rendezvous %d while %d is pending", ErrCorrupt, t, token)
		}
	}
	for p := r.poll(spin); ; {
		done, err := ready()
		if done || err != nil {
			return ok, err
		}
		if !p.Next() {
			break
		}
	}
	arm := func() { atomic.StoreUint32(r.u32(offASleep), 1) }
	disarm := func() { atomic.StoreUint32(r.u32(offASleep), 0) }
	err = r.wait(offAck, arm, disarm, true, ready, check)
	return ok, err
}

// ReadFrom copies len(p) bytes at addr in process pid's memory into p with
// process_vm_readv. A bad address is an error (EFAULT), never a fault here.
func ReadFrom(pid int, addr uint64, p []byte) error {
	for len(p) > 0 {
		local := []unix.Iovec{{Base: &p[0]}}
		local[0].SetLen(len(p))
		remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		switch {
		case errors.Is(err, unix.ESRCH):
			return fmt.Errorf("%w: pid %d", ErrPeerGone, pid)
		case errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOSYS):
			return fmt.Errorf("%w: process_vm_readv of pid %d: %w", ErrNoCMA, pid, err)
		case err != nil:
			return fmt.Errorf("shm: process_vm_readv of %d bytes at %#x in pid %d: %w", len(p), addr, pid, err)
		case n <= 0:
			return fmt.Errorf("shm: process_vm_readv of %d bytes at %#x in pid %d read nothing", len(p), addr, pid)
		}
		p = p[n:]
		addr += uint64(n)
	}
	return nil
}
