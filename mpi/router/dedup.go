package router

import "github.com/zorilla-p2p/zorilla/mpi/internal/proto"

// verdict is what delivery does with one fragment.
type verdict int

const (
	accept    verdict = iota // deliver it (from skip bytes into its data on)
	duplicate                // already delivered, by this copy of the sender or another: drop
	violation                // a gap in the sequence: the sender is broken
)

// position is how far delivery from one sender has come: every message
// numbered below seq, and the first off bytes of message seq. It is what a
// receiving agent acknowledges to the sender's copies.
type position struct {
	seq, off uint64
}

// covers reports whether a fragment [off, end) of message seq was
// delivered by position p.
func (p position) covers(seq, end uint64) bool {
	return seq < p.seq || seq == p.seq && end <= p.off
}

// after reports whether p is further than q.
func (p position) after(q position) bool {
	return p.seq > q.seq || p.seq == q.seq && p.off > q.off
}

// sequencer decides, per peer rank, which fragments pass. Messages carry a
// per-(source, destination) sequence number set by the sending library, so
// every copy of a replicated sender sends the same numbers and the same
// bytes. A fragment passes when it extends delivery from where it stands,
// whichever copy sent it: so when the copy that was sending a message dies
// half-way, the next copy's resent fragments complete it, and what was
// already delivered is dropped (or skipped, for a fragment that overlaps
// it). A sequencer is not safe for concurrent use; its owner serializes
// calls.
type sequencer map[uint32]*position

// check returns the verdict for a fragment about peer rank (the source at a
// receiver), and for accept how many of its data bytes were delivered
// already.
func (s sequencer) check(peer uint32, h *proto.MsgHeader, dataLen int) (v verdict, skip int) {
	p := s.at(peer)
	end := h.Offset + uint64(dataLen)
	switch {
	case h.Seq < p.seq:
		return duplicate, 0
	case h.Seq > p.seq || h.Offset > p.off:
		return violation, 0
	case dataLen > 0 && end <= p.off:
		return duplicate, 0
	}
	skip = int(p.off - h.Offset)
	p.off = end
	if end == h.Total {
		p.seq, p.off = p.seq+1, 0
	}
	return accept, skip
}

// checkOwn checks a fragment in a copy's own stream towards rank peer: the
// next one exactly, no repeats.
func (s sequencer) checkOwn(peer uint32, h *proto.MsgHeader, dataLen int) bool {
	p := s.at(peer)
	if h.Seq != p.seq || h.Offset != p.off {
		return false
	}
	_, _ = s.check(peer, h, dataLen)
	return true
}

func (s sequencer) at(peer uint32) *position {
	p := s[peer]
	if p == nil {
		p = &position{}
		s[peer] = p
	}
	return p
}
