package mpi

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// deadErr is why the reader ended. Call only after s.dead is closed.
func (s *Session) deadErr() error { return s.rerr }

// readLoop reads every frame the agent sends, eagerly, so the agent's queue
// towards this rank always drains (which is what keeps the agents' flow
// control free of deadlock). When it ends, the connection is closed so a
// blocked writer wakes, and every waiter sees s.dead.
func (s *Session) readLoop(br *bufio.Reader) {
	err := s.readFrames(br)
	_ = s.conn.Close()
	s.rerr = err
	close(s.dead)
}

func (s *Session) readFrames(br *bufio.Reader) error {
	var hdr [proto.HeaderLen]byte
	limit := max(proto.MaxControl, proto.MsgHeaderLen+s.maxData)
	for {
		typ, n, err := proto.ReadHeader(br, &hdr, limit)
		if err != nil {
			return s.lost(err)
		}
		if typ == proto.TypeMsg {
			if err := s.readMsg(br, n); err != nil {
				return err
			}
			continue
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			return s.lost(err)
		}
		if err := s.control(typ, body); err != nil {
			return err
		}
	}
}

// lost turns a read error into the error every call will return.
func (s *Session) lost(err error) error {
	if errors.Is(err, proto.ErrTooLarge) || errors.Is(err, proto.ErrMalformed) {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	s.sendMu.Lock()
	shut := s.sendShut
	s.sendMu.Unlock()
	if shut != nil {
		return shut // Finalize or Abort closed the connection
	}
	return fmt.Errorf("%w: %w", ErrAgentLost, err)
}

// control handles a frame other than MSG. A non-nil error ends the reader.
func (s *Session) control(typ byte, body []byte) error {
	switch typ {
	case proto.TypeStart:
		select {
		case <-s.started:
			return fmt.Errorf("%w: second start", ErrProtocol)
		default:
			close(s.started)
			return nil
		}
	case proto.TypeFail:
		f, err := proto.DecodeFail(body)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		return jobError(f)
	case proto.TypeBye:
		return ErrFinalized
	case proto.TypeRole:
		return s.role(body)
	case proto.TypeDecide:
		return s.decided(body)
	case proto.TypeSyncAck:
		return s.syncAcked(body)
	case proto.TypeCheckpointNow:
		if len(body) != 0 {
			return fmt.Errorf("%w: checkpoint-now frame with a %d-byte body", ErrProtocol, len(body))
		}
		s.ck.now.Store(true)
		return nil
	case proto.TypeShm: // with Welcome: ring files (shm.go)
		return s.shmFrame(body)
	case proto.TypeShmOn: // before Start: the live rings
		return s.shmOn(body)
	}
	return fmt.Errorf("%w: unexpected frame type %d", ErrProtocol, typ)
}

// readMsg reads one MSG fragment of n body bytes from the agent's socket.
// Its data goes straight into the receive buffer when a receive matched,
// else into the message's own buffer.
func (s *Session) readMsg(br io.Reader, n int) error {
	var hb [proto.MsgHeaderLen]byte
	if n < proto.MsgHeaderLen {
		return fmt.Errorf("%w: msg of %d bytes", ErrProtocol, n)
	}
	if _, err := io.ReadFull(br, hb[:]); err != nil {
		return s.lost(err)
	}
	dataLen := n - proto.MsgHeaderLen
	h, err := proto.DecodeMsgHeader(hb[:], dataLen)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	in, dst, err := s.place(&h, dataLen)
	if err != nil {
		return err
	}
	if _, err := io.ReadFull(br, dst); err != nil {
		return s.lost(err)
	}
	if h.Last(dataLen) {
		s.arrived(in)
	}
	return nil
}

// place finds the message a fragment belongs to (fragment) and where its
// data goes, dst: the matched receive's buffer, or the message's own. The
// caller reads the data into dst, then completes the message if the
// fragment was its last (arrived). Only the caller touches the data of a
// message still arriving.
func (s *Session) place(h *proto.MsgHeader, dataLen int) (in *inMsg, dst []byte, err error) {
	in, move, err := s.fragment(h, dataLen)
	if err != nil {
		return nil, nil, err
	}
	if move { // a receive was posted meanwhile: the rest goes straight into its buffer
		copy(in.recv.buf, in.buf[:h.Offset])
		in.buf, in.direct = in.recv.buf, true
	}
	end := int(h.Offset) + dataLen
	if !in.direct { // the message's own buffer grows with what really arrives
		in.buf = grow(in.buf, end, in.total)
	}
	return in, in.buf[h.Offset:end], nil
}

// grow returns buf with length end, doubling its capacity (up to the
// message's total) when it must move: an unexpected message of 32 MiB grew
// by a quarter at a time, copied itself a dozen times and faulted in every
// new page.
func grow(buf []byte, end, total int) []byte {
	if end > cap(buf) {
		moved := make([]byte, len(buf), max(end, min(2*cap(buf), total)))
		copy(moved, buf)
		buf = moved
	}
	return buf[:end]
}

// fragment finds (or, for a first fragment, creates and matches) the message
// a fragment belongs to, checking it continues where the last one ended.
// move reports that a receive matched the message after it started
// arriving into a buffer of its own: the reader then moves what came so far
// into the receive's buffer, outside the lock (only the reader touches the
// data of a message still arriving).
func (s *Session) fragment(h *proto.MsgHeader, dataLen int) (in *inMsg, move bool, err error) {
	if err := s.checkMsg(h); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.Offset != 0 {
		in = s.partial[h.Src]
		if in == nil || in.seq != h.Seq || uint64(in.got) != h.Offset {
			return nil, false, fmt.Errorf("%w: fragment at %d of message %d from rank %d out of order", ErrProtocol, h.Offset, h.Seq, h.Src)
		}
		in.got += dataLen
		return in, in.recv != nil && !in.direct && len(in.recv.buf) >= in.total, nil
	}
	if in, err = s.firstFragment(h, dataLen); err != nil {
		return nil, false, err
	}
	if in.recv != nil && len(in.recv.buf) >= in.total {
		in.buf, in.direct = in.recv.buf, true // straight into the user's buffer
	} else {
		in.buf = make([]byte, 0, min(in.total, 1<<20))
	}
	s.partial[h.Src] = in
	return in, false, nil
}

// checkMsg refuses a message header that is not for this rank, or whose
// message is too large to receive.
func (s *Session) checkMsg(h *proto.MsgHeader) error {
	if int(h.Dst) != s.rank || int(h.Src) >= s.size {
		return fmt.Errorf("%w: msg %d->%d delivered to rank %d", ErrProtocol, h.Src, h.Dst, s.rank)
	}
	if h.Total > uint64(maxMessage) {
		return fmt.Errorf("%w: message of %d bytes", ErrProtocol, h.Total)
	}
	return nil
}

// firstFragment makes the message whose first fragment h heads arrive:
// matched against the posted receives, and the choice and acknowledgement
// its match needs sent. The caller gives it a buffer. s.mu is held.
func (s *Session) firstFragment(h *proto.MsgHeader, dataLen int) (*inMsg, error) {
	if in := s.partial[h.Src]; in != nil {
		return nil, fmt.Errorf("%w: message %d from rank %d started inside message %d", ErrProtocol, h.Seq, h.Src, in.seq)
	}
	in := s.m.arrive(&inMsg{src: int(h.Src), ctx: h.Ctx &^ ctxSync, tag: int(h.Tag), seq: h.Seq, total: int(h.Total), got: dataLen,
		sync: h.Ctx&ctxSync != 0})
	if r := in.recv; r != nil {
		if r.choose {
			s.tell(r.num, proto.DecideRecv, true, in.src, in.tag)
		}
		s.acknowledge(in) // after the choice it depends on
	}
	return in, nil
}

// maxMessage bounds the size of one message (the receiver allocates it).
const maxMessage = 1 << 40

// arrived completes a message whose last fragment was read.
func (s *Session) arrived(in *inMsg) {
	s.mu.Lock()
	s.partial[in.src] = nil
	in.done = true
	r := in.recv
	s.mu.Unlock()
	if r != nil {
		finishRecv(r, in)
	}
}

// finishRecv completes a receive with its matched, fully arrived message.
func finishRecv(r *recvReq, in *inMsg) {
	st := Status{Source: in.src, Tag: in.tag, Count: in.total / r.elem, Bytes: in.total}
	if r.comm != nil {
		st.Source = r.comm.commRank(in.src)
	}
	switch {
	case in.total > len(r.buf):
		r.req.complete(st, fmt.Errorf("%w: %d bytes from rank %d tag %d, buffer of %d",
			ErrTruncate, in.total, in.src, in.tag, len(r.buf)))
	case in.total%r.elem != 0:
		r.req.complete(st, fmt.Errorf("%w: %d bytes from rank %d is not a whole number of %d-byte elements",
			ErrArg, in.total, in.src, r.elem))
	default:
		if !in.direct {
			copy(r.buf, in.buf)
		}
		r.req.complete(st, nil)
	}
}
