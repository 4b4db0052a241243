package mpi

// The matching engine: posted receives and arrived messages, both in order,
// matched on (context, source, tag) with wildcards on source and tag. A
// message is matchable as soon as its first fragment arrives (its envelope is
// known), so a large message can be received straight into the user's
// buffer. Because one source's messages arrive in the order it sent them and
// both queues are scanned in order, messages between a pair with the same
// tag and context are never overtaken. The engine does no I/O and no
// locking; the Session guards it with its mutex.

// inMsg is a message from its first fragment on.
type inMsg struct {
	src    int
	ctx    uint32
	tag    int
	seq    uint64
	total  int
	got    int    // data bytes arrived so far
	buf    []byte // where data goes: the receive's buffer, or the message's own
	direct bool   // buf is the matched receive's buffer
	recv   *recvReq
	done   bool
	sync   bool // sent by Ssend: the sender waits for an acknowledgement of the match
	acked  bool // the acknowledgement was sent
}

// recvReq is a posted receive. The message it matches on arrival is kept
// in it (msg), so a message that finds its receive posted costs no
// allocation.
type recvReq struct {
	src, tag int
	ctx      uint32
	buf      []byte // the user's buffer, as bytes
	elem     int    // element size, for Status.Count
	req      *Request
	choose   bool // a lead's receive from AnySource: its match is choice num, told to the backups
	num      uint64
	comm     *Comm // the receive's communicator: Status.Source is a rank of it
	msg      inMsg // the message that matched it on arrival (arrive)
}

// probeReq is a blocked Probe waiting for a matching envelope.
type probeReq struct {
	src, tag int
	ctx      uint32
	found    chan Status // buffered, receives one status
}

type matcher struct {
	posted     []*recvReq
	unexpected []*inMsg
	probes     []*probeReq
}

func matches(src, tag int, ctx uint32, m *inMsg) bool {
	return ctx == m.ctx && (src == AnySource || src == m.src) && (tag == AnyTag || tag == m.tag)
}

// arrive matches a new message (e, its first fragment's envelope, which
// it copies) against the posted receives and returns where the message is
// kept: in the receive it matched (msg.recv set), or, queued as unexpected
// (answering any waiting probe), in a new inMsg of its own.
func (m *matcher) arrive(e *inMsg) *inMsg {
	for i, r := range m.posted {
		if matches(r.src, r.tag, r.ctx, e) {
			m.posted = remove(m.posted, i)
			r.msg = *e
			r.msg.recv = r
			return &r.msg
		}
	}
	msg := new(inMsg)
	*msg = *e
	m.unexpected = append(m.unexpected, msg)
	kept := m.probes[:0]
	for _, p := range m.probes {
		if matches(p.src, p.tag, p.ctx, msg) {
			p.found <- envelope(msg)
			continue
		}
		kept = append(kept, p)
	}
	clear(m.probes[len(kept):])
	m.probes = kept
	return msg
}

// post matches a new receive against the unexpected messages. It returns the
// message it matched (which may still be arriving), or queues the receive.
func (m *matcher) post(r *recvReq) *inMsg {
	for i, msg := range m.unexpected {
		if matches(r.src, r.tag, r.ctx, msg) {
			m.unexpected = remove(m.unexpected, i)
			return msg
		}
	}
	m.posted = append(m.posted, r)
	return nil
}

// peek returns the first unexpected message a receive with this envelope
// would match, without taking it.
func (m *matcher) peek(src, tag int, ctx uint32) *inMsg {
	for _, msg := range m.unexpected {
		if matches(src, tag, ctx, msg) {
			return msg
		}
	}
	return nil
}

// unprobe forgets a probe that stopped waiting.
func (m *matcher) unprobe(p *probeReq) {
	for i, q := range m.probes {
		if q == p {
			m.probes = remove(m.probes, i)
			return
		}
	}
}

func envelope(msg *inMsg) Status {
	return Status{Source: msg.src, Tag: msg.tag, Count: msg.total, Bytes: msg.total}
}

func remove[T any](s []*T, i int) []*T {
	copy(s[i:], s[i+1:])
	s[len(s)-1] = nil
	return s[:len(s)-1]
}
