package mpi

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
	"unsafe"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
	"github.com/zorilla-p2p/zorilla/mpi/internal/shm"
)

// Single-copy messages between ranks on one agent, off unless the process
// sets EnvCmaMin. A message of at least that many bytes to a peer with
// rings is not copied into the ring: the
// sender writes a CMA frame (a rendezvous: its pid, the buffer's address
// and length, a token) and waits; the receiver's ring reader, the same
// goroutine that reads MSG frames, copies the bytes straight out of the
// sender's memory with process_vm_readv into the matched receive's buffer
// (or, for a message nobody waits for yet, into the message's own buffer,
// as a MSG would be), then publishes the token as done in the ring's
// completion word. Only then does the send return (or an Isend complete),
// so the buffer is never read after the program may change it. The reader
// copies whether or not a receive is posted, so a sender never waits for
// the receiving program, only for its ring reader, as a ring writer waits
// for room: no new deadlock.
//
// The first rendezvous on a ring checks that the pid named is the ring's
// writer (shm.Ring.CheckWriter: the ring's identity word read through that
// pid's memory). When that fails, because the kernel forbids the read
// (EPERM: a ptrace policy such as Yama's, or ranks of different uids;
// ENOSYS) or the pid means another process here (another pid namespace),
// the reader refuses the rendezvous, and the sender sends that message and
// every later one to this peer through the ring as copies: the choice is
// made once per peer, by the first large message. After the check, the pid
// may not change, and a read that fails is the peer's fault (a bad
// address: EFAULT, refused like garbage) or its death (ESRCH: the agent's
// failure of the job follows, and wins).
//
// The reader reads what the writer could itself read (same uid, same
// ptrace rules), so a lying writer learns nothing new; lengths are bounded
// by what the writer's memory really holds (the data arrives in chunks of
// cmaChunk, and an unexpected message's buffer grows with it).

// EnvCmaMin turns single-copy messages on for a process: the size in
// bytes from which its messages go single-copy (65536 is a fair start);
// unset or 0, never. It is off by default because where it was measured
// (a 2-core VM) process_vm_readv copied 1 MiB at 4 GB/s against 23 GB/s
// for a memmove, and the ring's two copies, which sender and receiver make
// at the same time, beat it at every size from 64 KiB to 8 MiB
// (BENCHMARKS.md, "single-copy"). A receiving process takes
// rendezvous whatever its own setting.
const EnvCmaMin = "ZORILLA_MPI_CMA_MIN"

// cmaChunk is the most one process_vm_readv copies: an unexpected
// message's buffer grows by at most this much (doubling) before the
// bytes are known to exist.
const cmaChunk = 4 << 20

// cmaSpin is how long a sender polls for the completion of a rendezvous
// of n bytes before it sleeps: the time of the receiver's copy at 1 GB/s
// (a slow copy here), on top of a ring's poll, and at most cmaSpinMax.
func cmaSpin(n int) time.Duration {
	return min(shm.Poll+time.Duration(n)*time.Nanosecond, cmaSpinMax)
}

// cmaSpinMax bounds a sender's poll for a completion (8 MiB at 1 GB/s):
// past it the receiver is not copying (stopped, or descheduled), and the
// sender sleeps.
const cmaSpinMax = 8 * time.Millisecond

// cmaMinFromEnv is this process's threshold.
func cmaMinFromEnv() (int, error) {
	v := os.Getenv(EnvCmaMin)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s=%q: want a size in bytes, 0 for never", ErrArg, EnvCmaMin, v)
	}
	return n, nil
}

// cmaWrite sends sr through a rendezvous on r, if the peer takes them and
// the message is large enough; ok false means the caller copies it
// through the ring instead. The message's fragments all go at once.
func (s *Session) cmaWrite(r *shm.Ring, sr *sendReq) (ok bool, err error) {
	dst := int(sr.h.Dst)
	if s.shm.cmaMin == 0 || len(sr.data) < s.shm.cmaMin || s.shm.cmaOff[dst].Load() {
		return false, nil
	}
	c := proto.Cma{Msg: sr.h, Pid: uint32(os.Getpid()), Addr: uint64(uintptr(unsafe.Pointer(&sr.data[0]))),
		Ident: r.Ident(), Token: r.NextToken()}
	c.Msg.Offset, c.Msg.Total = 0, uint64(len(sr.data))
	var f [proto.HeaderLen + proto.CmaLen]byte
	c.Put(f[:])
	if err := r.WriteFrame(f[:], nil, s.alive); err != nil {
		return true, s.shmWriteErr(dst, err)
	}
	done, err := r.WaitAck(c.Token, cmaSpin(len(sr.data)), s.alive)
	runtime.KeepAlive(sr.data) // the reader copied from it until now
	if err != nil {
		return true, s.shmWriteErr(dst, err)
	}
	if !done { // dst cannot read this process's memory: copies from now on
		s.shm.cmaOff[dst].Store(true)
	}
	return done, nil
}

// shmReadCma reads the rest of a CMA frame of n body bytes and copies its
// message out of the writer's memory (see above). mu is held.
func (s *Session) shmReadCma(ir *inRing, n int) error {
	var b [proto.CmaLen]byte
	if n != len(b) {
		return fmt.Errorf("%w: cma frame of %d bytes", ErrProtocol, n)
	}
	if err := ir.readFull(b[:], s.alive); err != nil {
		return err
	}
	c, err := proto.DecodeCma(b[:])
	if err == nil && c.Token != ir.token+1 {
		err = fmt.Errorf("rendezvous %d after %d", c.Token, ir.token)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	ir.token = c.Token
	if !ir.cmaChecked(int(c.Pid), c.Ident) {
		ir.r.Ack(c.Token, false) // the writer copies it through the ring instead
		return nil
	}
	if int(c.Pid) != ir.pid {
		return fmt.Errorf("%w: rendezvous from pid %d, the writer is pid %d", ErrProtocol, c.Pid, ir.pid)
	}
	h := c.Msg
	if err := ir.stamp(&h); err != nil {
		return err
	}
	for off := uint64(0); off < c.Msg.Total; {
		n := int(min(cmaChunk, c.Msg.Total-off))
		h.Offset = off
		in, dst, err := s.place(&h, n)
		if err != nil {
			return err
		}
		if err := shm.ReadFrom(ir.pid, c.Addr+off, dst); err != nil {
			return fmt.Errorf("%w: message %d from rank %d: %w", ErrProtocol, h.Seq, ir.src, err)
		}
		if off += uint64(n); h.Last(n) {
			// The sender first: in a ping-pong it must be back in its
			// receive before the answer comes, or the answer finds no
			// receive posted and takes two copies.
			ir.r.Ack(c.Token, true)
			s.shm.cmaIn.Add(1) // (before the receive completes: tests count)
			s.arrived(in)
		}
	}
	return nil
}

// cmaCheck checks a ring's writer (tests make it fail).
var cmaCheck = (*shm.Ring).CheckWriter

// cmaChecked reports whether this ring's writer takes rendezvous, checking
// it (once) on the first one: pid must be the ring's writer and readable.
// mu is held.
func (ir *inRing) cmaChecked(pid int, ident uint64) bool {
	if ir.pid == 0 && !ir.noCma {
		if err := cmaCheck(ir.r, pid, ident); err != nil {
			ir.noCma = true // the writer copies through the ring from now on
		} else {
			ir.pid = pid
		}
	}
	return !ir.noCma
}

// cmaGone is whether a ring read failed because its writer died: the
// agent's failure of the job is on its way, and says it better than a
// refusal would.
func cmaGone(err error) bool { return errors.Is(err, shm.ErrPeerGone) }

// refuseUnlessFailed refuses what rank peer wrote unless the session ends
// within abortWait (the agent's FAIL for a dead peer), so the job fails
// with the real cause; a peer that lied about its pid is still refused.
func (s *Session) refuseUnlessFailed(peer int, err error) {
	t := time.NewTimer(abortWait)
	defer t.Stop()
	select {
	case <-s.dead:
	case <-t.C:
		s.shmRefuse(peer, err)
	}
}
