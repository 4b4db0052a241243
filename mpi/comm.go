package mpi

import (
	"fmt"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Comm is a communicator: a group of ranks and a context that keeps its
// traffic apart. Point-to-point calls and collectives on one Comm use
// different contexts, so a user receive never takes a collective's message.
// A Comm is safe for concurrent use, except that collectives on one Comm
// must be called in the same order by every rank, one at a time.
type Comm struct {
	s     *Session
	rank  int
	size  int
	p2p   uint32      // context of point-to-point traffic
	coll  uint32      // context of collective traffic
	group []int       // world rank of each rank of c; nil for the world
	index map[int]int // rank in c of each member's world rank; nil for the world
	tags  int         // added to collective tags: a level of a hierarchical collective
	flat  bool        // collectives ignore the hosts (tests compare both)
	hosts *hostsOnce  // which ranks of c share a host, computed once
}

// worldRank is the world rank of rank r of c.
func (c *Comm) worldRank(r int) int {
	if c.group == nil {
		return r
	}
	return c.group[r]
}

// commRank is the rank in c of world rank w (w must be a member).
func (c *Comm) commRank(w int) int {
	if c.index == nil {
		return w
	}
	if r, ok := c.index[w]; ok {
		return r
	}
	return -1
}

// Rank is this process's rank in c, from 0 to Size()-1.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks in c.
func (c *Comm) Size() int { return c.size }

// Session is the connection c belongs to.
func (c *Comm) Session() *Session { return c.s }

func (c *Comm) checkRank(r int, what string) error {
	if r < 0 || r >= c.size {
		return argErr("%s rank %d outside 0..%d", what, r, c.size-1)
	}
	return nil
}

func checkTag(tag int) error {
	if tag < 0 || tag > proto.MaxTag {
		return argErr("tag %d outside 0..%d", tag, proto.MaxTag)
	}
	return nil
}

// isend posts data to dst in context ctx.
func (c *Comm) isend(ctx uint32, data []byte, dst, tag int, inline bool) *Request {
	h, err := c.sendHeader(ctx, data, dst, tag)
	if err != nil {
		return failed(c.s, err)
	}
	req, _ := c.s.postMsg(h, data, inline)
	return req
}

// send sends data to dst in context ctx and returns once it is written:
// a blocking Send. With no other send under way it writes the message
// itself without a request (sendNow); else it queues it like isend and
// waits for its turn.
func (c *Comm) send(ctx uint32, data []byte, dst, tag int) error {
	h, err := c.sendHeader(ctx, data, dst, tag)
	if err != nil {
		return err
	}
	if sent, err := c.s.sendNow(h, data); sent {
		return err
	}
	req, _ := c.s.postMsg(h, data, true)
	_, err = req.Wait()
	return err
}

func (c *Comm) sendHeader(ctx uint32, data []byte, dst, tag int) (proto.MsgHeader, error) {
	if err := c.checkRank(dst, "destination"); err != nil {
		return proto.MsgHeader{}, err
	}
	if err := checkTag(tag); err != nil {
		return proto.MsgHeader{}, err
	}
	return proto.MsgHeader{Dst: uint32(c.worldRank(dst)), Src: uint32(c.s.rank), Ctx: ctx, Tag: int32(tag), Total: uint64(len(data))}, nil
}

// recvOp is a receive's request and posted receive, allocated together.
type recvOp struct {
	req Request
	r   recvReq
}

// irecv posts a receive into buf (elements of elem bytes) in context ctx.
func (c *Comm) irecv(ctx uint32, buf []byte, elem, src, tag int) *Request {
	op := &recvOp{req: Request{s: c.s, done: make(chan struct{})}}
	if err := c.postRecv(op, ctx, buf, elem, src, tag); err != nil {
		return failed(c.s, err)
	}
	return &op.req
}

// postRecv checks a receive's arguments and posts it as op, whose request
// is set up (s, done, own) and otherwise zero: it matches a message that
// arrived already (and completes at once if it arrived whole), or waits in
// the matching engine.
func (c *Comm) postRecv(op *recvOp, ctx uint32, buf []byte, elem, src, tag int) error {
	if src != AnySource {
		if err := c.checkRank(src, "source"); err != nil {
			return err
		}
	}
	if tag != AnyTag {
		if err := checkTag(tag); err != nil {
			return err
		}
	}
	if src != AnySource {
		src = c.worldRank(src)
	}
	req, r := &op.req, &op.r
	*r = recvReq{src: src, tag: tag, ctx: ctx, buf: buf, elem: elem, req: req, comm: c}
	s := c.s
	if src == AnySource && s.rep != nil {
		num, d, mine, err := s.choice(proto.DecideRecv)
		switch {
		case err != nil:
			return err
		case mine:
			r.choose, r.num = true, num
		default:
			r.src = int(d.Src) // the message the lead took: the same here
		}
	}
	req.poll, req.src = true, r.src
	s.mu.Lock()
	in := s.m.post(r)
	arrived := in != nil && in.done
	if in != nil && !arrived {
		in.recv = r // the reader finishes it when the last fragment is in
	}
	if in != nil && r.choose {
		s.tell(r.num, proto.DecideRecv, true, in.src, in.tag)
	}
	if in != nil {
		s.acknowledge(in)
	}
	s.mu.Unlock()
	if arrived {
		finishRecv(r, in)
	}
	return nil
}

// Probe blocks until a message from src with tag (wildcards allowed) can be
// received, and returns its envelope without receiving it. Count and Bytes
// are its length in bytes.
func (c *Comm) Probe(src, tag int) (Status, error) {
	if src != AnySource || c.s.rep == nil {
		return c.probe(src, tag)
	}
	num, d, mine, err := c.s.choice(proto.DecideProbe)
	switch {
	case err != nil:
		return Status{}, err
	case !mine:
		return c.probe(int(d.Src), int(d.Tag))
	}
	st, err := c.probe(src, tag)
	if err == nil {
		c.s.tell(num, proto.DecideProbe, true, st.Source, st.Tag)
	}
	return st, err
}

func (c *Comm) probe(src, tag int) (Status, error) {
	ok, st, err := c.iprobe(src, tag)
	if ok || err != nil {
		return st, err
	}
	s := c.s
	w := src
	if src != AnySource {
		w = c.worldRank(src)
	}
	p := &probeReq{src: w, tag: tag, ctx: c.p2p, found: make(chan Status, 1)}
	s.mu.Lock()
	if in := s.m.peek(w, tag, c.p2p); in != nil {
		s.mu.Unlock()
		return c.envelope(in), nil
	}
	s.m.probes = append(s.m.probes, p)
	s.mu.Unlock()
	select {
	case st := <-p.found:
		st.Source = c.commRank(st.Source)
		return st, nil
	case <-s.dead:
		s.mu.Lock()
		s.m.unprobe(p)
		s.mu.Unlock()
		return Status{}, fmt.Errorf("mpi: probe: %w", s.deadErr())
	}
}

// envelope is the status of an arrived message, with its source as a rank of c.
func (c *Comm) envelope(in *inMsg) Status {
	st := envelope(in)
	st.Source = c.commRank(st.Source)
	return st
}

// Iprobe reports whether a message from src with tag can be received now,
// and its envelope if so. In a replicated job the lead copy's answer is
// every copy's.
func (c *Comm) Iprobe(src, tag int) (bool, Status, error) {
	if c.s.rep == nil {
		return c.iprobe(src, tag)
	}
	if err := c.checkSource(src); err != nil {
		return false, Status{}, err
	}
	num, d, mine, err := c.s.choice(proto.DecideProbe)
	switch {
	case err != nil:
		return false, Status{}, err
	case !mine && !d.Found:
		return false, Status{}, nil
	case !mine:
		st, err := c.probe(int(d.Src), int(d.Tag))
		return err == nil, st, err
	}
	ok, st, err := c.iprobe(src, tag)
	if err == nil {
		c.s.tell(num, proto.DecideProbe, ok, st.Source, st.Tag)
	}
	return ok, st, err
}

// checkSource checks a source and tag pattern.
func (c *Comm) checkSource(src int) error {
	if src != AnySource {
		return c.checkRank(src, "source")
	}
	return nil
}

func (c *Comm) iprobe(src, tag int) (bool, Status, error) {
	if src != AnySource {
		if err := c.checkRank(src, "source"); err != nil {
			return false, Status{}, err
		}
	}
	if tag != AnyTag {
		if err := checkTag(tag); err != nil {
			return false, Status{}, err
		}
	}
	if src != AnySource {
		src = c.worldRank(src)
	}
	s := c.s
	s.mu.Lock()
	in := s.m.peek(src, tag, c.p2p)
	s.mu.Unlock()
	if in != nil {
		return true, c.envelope(in), nil
	}
	select {
	case <-s.dead:
		return false, Status{}, fmt.Errorf("mpi: probe: %w", s.deadErr())
	default:
		return false, Status{}, nil
	}
}
