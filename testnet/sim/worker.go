package sim

import (
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/worker"
)

// commitMargin is what a worker adds to an advert's deadline for its
// lease's life (the worker's leaseTTL).
const commitMargin = 15 * time.Second

// onAdvert: an advert reaches an agent's worker, which decides with its
// owner policy and lease table (Leases.Admit) and offers, or declines.
func (w *World) onAdvert(e event) {
	a, j, f := w.agents[e.agent], w.jobs[e.job], e.data.(*floodInfo)
	need := f.need
	sub := w.agents[j.sub]
	var ttl time.Duration
	if need.Deadline > 0 {
		ttl = need.Deadline + commitMargin
	}
	d, l, err := a.leases.Admit(sub.id, need, ttl)
	switch {
	case err != nil:
		w.tracef(e, "%s: %v", f.key, err != nil)
	case !d.Accept:
		w.tracef(e, "%s: declined %s", f.key, d.Code)
		if d.Code != "" {
			w.send(int(a.idx), int(j.sub), evDecline, j.idx, declineIn{from: a.idx,
				msg: proto.DeclineMsg{Job: need.Job, Code: d.Code, Detail: d.Detail}})
		}
	default:
		w.tracef(e, "%s: offer %s slots %d", f.key, l.Key, l.Slots)
		w.stats.leases++
		w.ledger[l.Key] = l.Expires
		msg := proto.OfferMsg{Job: need.Job, Lease: l.Key, Slots: l.Slots, Cores: l.Cores, Memory: l.Memory, Expires: l.Expires}
		if !w.send(int(a.idx), int(j.sub), evOffer, j.idx, offerIn{from: a.idx, msg: msg}) {
			_, _ = a.leases.End(l.Key) // the offer did not get through: not kept
		}
	}
	w.checkHost(a)
}

type offerReply struct {
	lease string
	keep  bool
}

// onOfferReply: a lease not kept is given back at once.
func (w *World) onOfferReply(e event) {
	a, r := w.agents[e.agent], e.data.(offerReply)
	w.tracef(e, "%s keep=%v", r.lease, r.keep)
	if r.keep {
		a.leases.MarkHeld(r.lease)
	} else {
		_, _ = a.leases.End(r.lease)
		delete(w.ledger, r.lease)
	}
	w.checkHost(a)
}

// onLeaseReq: a lease request reaches the worker, which decides with the
// worker's own rule (worker.DecideLease) and carries it out.
func (w *World) onLeaseReq(e event) {
	a, j, c := w.agents[e.agent], w.jobs[e.job], e.data.(leaseCall)
	req := c.eff.Req.Normalize()
	ls, leased := a.leases.Get(req.Lease)
	if exp, kept := w.ledger[req.Lease]; req.Op == proto.OpCommit && !leased && kept && !w.clock(a).Before(exp) {
		w.violate(a.idx, "lease %s of %s committed at %v, after it expired at %v", req.Lease, j.id, w.clock(a), exp)
	}
	p := a.parts[req.Lease]
	v := worker.LeaseView{Lease: ls, Leased: leased, Runs: p != nil}
	do, err := worker.DecideLease(w.agents[j.sub].id, req, v)
	reply := proto.LeaseReply{OK: err == nil}
	if err == nil {
		reply = w.carryOut(a, j, do, req, ls, p)
	}
	if !reply.OK && reply.Error == "" {
		reply.Error = err.Error()
	}
	w.tracef(e, "%s %s: %s ok=%v", req.Op, req.Lease, do, reply.OK)
	w.checkHost(a)
	if c.tries < 0 {
		return // a one-way request: nobody waits for its answer
	}
	c.reply = reply
	if !w.send(int(a.idx), int(j.sub), evLeaseReply, j.idx, c) {
		c.reply, c.err = proto.LeaseReply{}, errNoReply
		w.push(callTimeout, evLeaseReply, j.sub, j.idx, c)
	}
}

// carryOut does what DecideLease said.
func (w *World) carryOut(a *agent, j *simJob, do string, req proto.LeaseRequest, ls worker.Lease, p *part) proto.LeaseReply {
	ok := proto.LeaseReply{OK: true}
	switch do {
	case "cancel", "end":
		_, _ = a.leases.End(req.Lease)
		delete(w.ledger, req.Lease)
	case "commit":
		if a.liar {
			_, _ = a.leases.End(req.Lease)
			return proto.LeaseReply{Error: "offer not honoured"}
		}
		if err := worker.CommitRefusal(*req.Commit, ls, 0); err != nil {
			return proto.LeaseReply{Error: err.Error()}
		}
		if err := a.leases.Commit(req.Lease, req.Job); err != nil {
			return proto.LeaseReply{Error: err.Error()}
		}
		delete(w.ledger, req.Lease)
		w.startPart(a, j, req)
	case "release":
		w.release(a, p)
	case "resume":
		w.resume(p)
	case "kill":
		w.kill(a, p, true)
	case "retry", "rekey":
		if p != nil {
			w.kill(a, p, false)
		}
		nl, err := a.leases.Renew(req.Lease)
		if err != nil {
			return proto.LeaseReply{Error: err.Error()}
		}
		ok.Lease = nl.Key
		w.ledger[nl.Key] = nl.Expires
	}
	return ok
}
