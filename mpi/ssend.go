package mpi

import (
	"fmt"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Synchronous sends. A message sent by Ssend carries its communicator's
// context with the top bit set (ctxSync); the receiver matches it like any
// other message and, once a receive has matched it, sends the sender an
// empty acknowledgement in context ctxAck whose tag is the message's
// sequence number (mod 2^31), which is unique among the sender's
// outstanding messages to that receiver. Ssend completes when that
// acknowledgement arrives.
//
// In a replicated job the acknowledgement is a SyncAck frame, not a
// message: a message has a sequence number, which every copy would have to
// send at the same point of its program, but a match happens whenever the
// message arrives (and acknowledging later, when the program sees the
// receive complete, deadlocks programs MPI allows, such as a ring of
// Ssends). Every copy of the receiver acknowledges; the agents forward the
// lead's acknowledgement to every copy of the sender, and keep a backup's
// until the lead's comes (it goes out if the backup takes over). Each copy
// of the sender completes its Ssend at the first acknowledgement and
// ignores repeats.

// Contexts outside the communicators' own.
const (
	ctxSync uint32 = 1 << 31 // flag on a synchronous send's context
	ctxAck  uint32 = 2       // acknowledgements of synchronous sends
)

// Ssend sends buf to dst and returns once a matching receive has started
// on dst (MPI_Ssend): a program that only works with buffered sends
// deadlocks with Ssend, which is how MPI programs test themselves. In a
// replicated job it returns once the lead copy of dst matched it.
func Ssend[T Elem](c *Comm, buf []T, dst, tag int) error {
	_, err := Issend(c, buf, dst, tag).Wait()
	return err
}

// Issend starts a synchronous send: the request completes once buf was
// handed to the agent and a receive on dst has matched the message.
func Issend[T Elem](c *Comm, buf []T, dst, tag int) *Request {
	if err := c.checkRank(dst, "destination"); err != nil {
		return failed(c.s, err)
	}
	if err := checkTag(tag); err != nil {
		return failed(c.s, err)
	}
	s, w := c.s, c.worldRank(dst)
	h := proto.MsgHeader{Dst: uint32(w), Src: uint32(s.rank), Ctx: c.p2p | ctxSync, Tag: int32(tag),
		Total: uint64(len(buf) * sizeOf[T]())}
	var ack *Request
	if s.rep != nil {
		ack = newRequest(s)
	}
	sent, seq := s.postMsgAck(h, wireOf(buf), ack)
	if ack == nil {
		ack = s.world.irecv(ctxAck, nil, 1, w, int(seq&proto.MaxTag))
	}
	req := newRequest(s)
	go func() { // ends when both do, which they do at the latest when the session dies
		if _, err := sent.Wait(); err != nil {
			s.forgetSync(w, seq)
			req.complete(Status{}, err) // never sent: no acknowledgement will come
			return
		}
		_, err := ack.Wait()
		if err != nil {
			err = fmt.Errorf("mpi: ssend: %w", err)
		}
		req.complete(Status{}, err)
	}()
	return req
}

// acknowledge answers a synchronous message that a receive has just
// matched. s.mu is held.
func (s *Session) acknowledge(in *inMsg) {
	if !in.sync || in.acked {
		return
	}
	in.acked = true
	if s.rep != nil {
		s.postFrame(proto.SyncAck{Dst: uint32(in.src), Seq: in.seq}.Encode())
		return
	}
	s.sendAck(in.src, in.seq)
}

// syncKey names a replicated copy's synchronous send: its destination's
// world rank and the message's sequence number.
type syncKey struct {
	dst int
	seq uint64
}

// syncAcked handles a SyncAck frame: the lead copy of a.Src matched the
// synchronous message a.Seq. Repeats, from other copies or resent, find no
// send waiting and are dropped.
func (s *Session) syncAcked(body []byte) error {
	a, err := proto.DecodeSyncAck(body)
	if err != nil || int(a.Dst) != s.rank || int(a.Src) >= s.size {
		return fmt.Errorf("%w: sync ack %+v to rank %d: %v", ErrProtocol, a, s.rank, err)
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	k := syncKey{int(a.Src), a.Seq}
	if ack := s.syncs[k]; ack != nil {
		delete(s.syncs, k)
		ack.complete(Status{}, nil)
	} else if a.Seq >= s.seq[a.Src] {
		// A backup behind its lead: the receiver matched the lead's
		// message before this copy sent its own.
		s.syncEarly[k] = true
	}
	return nil
}

// awaitSync makes ack wait for the SyncAck of message k, or completes it
// when that came first. s.sendMu is held.
func (s *Session) awaitSync(k syncKey, ack *Request) {
	if s.syncEarly[k] {
		delete(s.syncEarly, k)
		ack.complete(Status{}, nil)
		return
	}
	s.syncs[k] = ack
}

// forgetSync stops waiting for the acknowledgement of a message that was
// never sent.
func (s *Session) forgetSync(dst int, seq uint64) {
	s.sendMu.Lock()
	delete(s.syncs, syncKey{dst, seq})
	s.sendMu.Unlock()
}

func (s *Session) sendAck(src int, seq uint64) {
	h := proto.MsgHeader{Dst: uint32(src), Src: uint32(s.rank), Ctx: ctxAck, Tag: int32(seq & proto.MaxTag)}
	s.postMsg(h, nil, false) // a failure is the session's, which every call reports
}

// epoch is the origin of Wtime.
var epoch = time.Now()

// Wtime is the time in seconds since a fixed moment in this process's past
// (MPI_Wtime), from a monotonic clock: differences measure elapsed time.
func Wtime() float64 { return time.Since(epoch).Seconds() }
