package mpi

import (
	"fmt"
	"net"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Sends are written to the agent in the order they were posted, one whole
// message (all its fragments) at a time, which is what keeps messages
// between a pair from overtaking each other and lets the receiver
// reassemble per source. The goroutine that finds no writer active becomes
// the writer: a blocking Send writes its own message itself (no hand-off on
// the latency path), an Isend starts a goroutine so it never blocks.

// sendReq is one queued message or control frame.
type sendReq struct {
	h    proto.MsgHeader
	data []byte
	ctrl proto.Frame // a control frame (Finalize, Abort) instead of a message
	req  *Request
}

// postMsg queues a message; inline makes the caller write it if no writer
// is active. It returns the message's sequence number too.
func (s *Session) postMsg(h proto.MsgHeader, data []byte, inline bool) (*Request, uint64) {
	return s.post(h, data, inline, nil)
}

// postMsgAck queues a synchronous message; when ack is not nil, it waits
// from then on for the message's SyncAck (replicated copies).
func (s *Session) postMsgAck(h proto.MsgHeader, data []byte, ack *Request) (*Request, uint64) {
	return s.post(h, data, false, ack)
}

func (s *Session) post(h proto.MsgHeader, data []byte, inline bool, ack *Request) (*Request, uint64) {
	sr := &sendReq{h: h, data: data, req: newRequest(s)}
	s.sendMu.Lock()
	if err := s.shutLocked(); err != nil {
		s.sendMu.Unlock()
		sr.req.complete(Status{}, err)
		return sr.req, 0
	}
	sr.h.Seq = s.seq[h.Dst]
	s.seq[h.Dst]++
	if ack != nil {
		s.awaitSync(syncKey{int(h.Dst), sr.h.Seq}, ack)
	}
	s.sendq = append(s.sendq, sr)
	s.kick(sr.req, inline)
	return sr.req, sr.h.Seq
}

// sendNow writes a message at once, without queuing it or making it a
// request, when no writer is active and nothing waits in the queue: a
// blocking send's common case, which then costs no allocation and no
// channel. sent is false when it could not (the caller posts the message
// instead). Sends queued meanwhile are handed to a goroutine, as drain does
// after its own.
func (s *Session) sendNow(h proto.MsgHeader, data []byte) (sent bool, err error) {
	s.sendMu.Lock()
	if s.writing || len(s.sendq) > 0 || s.shutLocked() != nil {
		s.sendMu.Unlock()
		return false, nil
	}
	h.Seq = s.seq[h.Dst]
	s.seq[h.Dst]++
	s.writing = true
	s.sendMu.Unlock()
	sr := sendReq{h: h, data: data}
	err = s.write(&sr)
	s.releaseWriter()
	return true, err
}

// releaseWriter gives the right to write back (s.writing, taken by a
// caller that wrote without the queue), handing the sends queued meanwhile
// to a goroutine.
func (s *Session) releaseWriter() {
	s.sendMu.Lock()
	more := len(s.sendq) > 0
	s.writing = more
	s.sendMu.Unlock()
	if more {
		go s.drain(nil)
	}
}

// postControl queues a control frame that ends sending (Finalize, Abort);
// later sends fail with shut. first puts it before any message not yet
// started.
func (s *Session) postControl(f proto.Frame, shut error, first bool) *Request {
	sr := &sendReq{ctrl: f, req: newRequest(s)}
	s.sendMu.Lock()
	if err := s.shutLocked(); err != nil {
		s.sendMu.Unlock()
		sr.req.complete(Status{}, err)
		return sr.req
	}
	s.sendShut = shut
	if first {
		s.sendq = append([]*sendReq{sr}, s.sendq...)
	} else {
		s.sendq = append(s.sendq, sr)
	}
	s.kick(sr.req, true)
	return sr.req
}

// postFrame queues a control frame that does not end sending (a lead's
// choice), in order with the messages; it never blocks.
func (s *Session) postFrame(f proto.Frame) {
	sr := &sendReq{ctrl: f, req: newRequest(s)}
	s.sendMu.Lock()
	if s.shutLocked() != nil {
		s.sendMu.Unlock()
		return
	}
	s.sendq = append(s.sendq, sr)
	s.kick(sr.req, false)
}

// shutLocked is the error a new send gets, or nil. sendMu is held.
func (s *Session) shutLocked() error {
	if s.sendShut != nil {
		return s.sendShut
	}
	select {
	case <-s.dead:
		return s.deadErr()
	default:
		return nil
	}
}

// kick starts a writer unless one is active. sendMu is held; kick unlocks.
func (s *Session) kick(own *Request, inline bool) {
	if s.writing {
		s.sendMu.Unlock()
		return
	}
	s.writing = true
	s.sendMu.Unlock()
	if inline {
		s.drain(own)
	} else {
		go s.drain(nil)
	}
}

// drain writes queued sends in order. With own set it stops once own is
// written and hands what is left to a goroutine, so a caller never writes
// more than the sends queued before its own.
func (s *Session) drain(own *Request) {
	for {
		s.sendMu.Lock()
		if len(s.sendq) == 0 {
			s.writing = false
			s.sendMu.Unlock()
			return
		}
		if own != nil && isDone(own) {
			s.sendMu.Unlock()
			go s.drain(nil)
			return
		}
		sr := s.sendq[0]
		s.sendq[0] = nil
		if len(s.sendq) == 1 {
			s.sendq = s.sendq[:0] // empty: the next send reuses the slot, no new array
		} else {
			s.sendq = s.sendq[1:]
		}
		s.sendMu.Unlock()
		sr.req.complete(Status{}, s.write(sr))
	}
}

func isDone(r *Request) bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// write writes one message as fragments of at most maxData bytes, each as a
// frame header plus data in one writev.
func (s *Session) write(sr *sendReq) error {
	if sr.ctrl == nil { // to a rank on this agent: through shared memory (shm.go)
		if ok, err := s.shmWrite(sr); ok {
			return err
		}
	}
	if sr.ctrl != nil {
		if _, err := s.conn.Write(sr.ctrl); err != nil {
			return s.writeErr(err)
		}
		return nil
	}
	hdr := make([]byte, proto.HeaderLen+proto.MsgHeaderLen)
	total := len(sr.data)
	for off := 0; ; {
		n := min(s.maxData, total-off)
		sr.h.Offset = uint64(off)
		proto.PutMsgFrame(hdr, &sr.h, n)
		bufs := net.Buffers{hdr, sr.data[off : off+n]}
		if _, err := bufs.WriteTo(s.conn); err != nil {
			return s.writeErr(err)
		}
		if off += n; off >= total {
			return nil
		}
	}
}

// writeErr explains a failed write. The socket broke, so the reader is about
// to end with the real reason (the agent's Fail frame, typically): wait a
// little for it.
func (s *Session) writeErr(err error) error {
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-s.dead:
		return s.deadErr()
	case <-t.C:
		_ = s.conn.Close()
		return fmt.Errorf("%w: %w", ErrAgentLost, err)
	}
}
