package router

import "github.com/zorilla-p2p/zorilla/mpi/internal/proto"

// verdict is what delivery does with one fragment.
type verdict int

const (
	accept    verdict = iota // deliver it
	duplicate                // another copy of the sender already delivered (or is delivering) it: drop
	violation                // out of sequence: the sender is broken
)

// seqState follows the messages of one sender to one rank copy.
type seqState struct {
	next  uint64 // sequence number of the next message to deliver
	owner int    // replica of the sender whose copy of message next is being delivered, or -1
	got   uint64 // bytes of message next delivered so far
}

// sequencer decides, per peer rank, which fragments pass. Messages carry a
// per-(source, destination) sequence number set by the sending library, so
// the copies of a replicated sender send the same numbers: the first copy to
// start message n delivers all of its fragments, the others' are dropped,
// and anything below n is a duplicate. A sequencer is not safe for
// concurrent use; its owner serializes calls.
type sequencer map[uint32]*seqState

// check returns the verdict for a fragment about peer rank (the source at a
// receiver, the destination at a sender's own agent) sent by replica from.
func (s sequencer) check(peer uint32, h *proto.MsgHeader, dataLen, from int) verdict {
	st := s[peer]
	if st == nil {
		st = &seqState{owner: -1}
		s[peer] = st
	}
	switch {
	case h.Seq < st.next:
		return duplicate
	case h.Seq > st.next:
		return violation
	}
	if st.owner < 0 {
		if h.Offset != 0 {
			return violation
		}
		st.owner = from
	}
	if from != st.owner {
		return duplicate
	}
	if h.Offset != st.got {
		return violation
	}
	st.got += uint64(dataLen)
	if h.Last(dataLen) {
		st.next, st.owner, st.got = st.next+1, -1, 0
	}
	return accept
}
