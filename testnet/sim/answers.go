package sim

import (
	"fmt"
	"time"

	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// onOffer: an offer reaches the submitter, which measures its sender.
func (w *World) onOffer(e event) {
	j := w.jobs[e.job]
	if j.gone || j.m == nil {
		return
	}
	o := e.data.(offerIn)
	j.tokens++
	j.offers[j.tokens] = o
	w.tracef(e, "from a%d lease %s slots %d", o.from, o.msg.Lease, o.msg.Slots)
	w.step(j, lifecycle.Arrived{Token: j.tokens, From: w.agents[o.from].id})
	w.push(w.topo.rtt(int(j.sub), int(o.from)), evMeasured, j.sub, j.idx, j.tokens)
}

func (w *World) onMeasured(e event) {
	j := w.jobs[e.job]
	if j.gone {
		return
	}
	token := e.data.(uint64)
	o := j.offers[token]
	w.tracef(e, "token %d", token)
	w.step(j, lifecycle.Offer{Token: token, From: w.agents[o.from].id, Msg: o.msg,
		RTT: w.topo.rtt(int(j.sub), int(o.from)), Relayed: w.topo.relayed(int(j.sub), int(o.from))})
}

func (w *World) onDecline(e event) {
	j := w.jobs[e.job]
	if j.gone || j.m == nil {
		return
	}
	d := e.data.(declineIn)
	w.tracef(e, "from a%d %s", d.from, d.msg.Code)
	w.step(j, lifecycle.Decline{From: w.agents[d.from].id, Msg: d.msg})
}

type declineIn struct {
	from int32
	msg  proto.DeclineMsg
}

// leaseCall is a lease request on its way, or its outcome on the way back.
type leaseCall struct {
	eff   lifecycle.Lease
	tries int
	reply proto.LeaseReply
	err   error
}

// callTimeout is how long a lease request that gets no reply takes to
// fail; giveBackTries how often a give-back is sent.
const (
	callTimeout   = 10 * time.Second
	giveBackTries = 3
)

// sendLease sends a lease request; when it cannot get there its failure
// comes back after callTimeout.
func (w *World) sendLease(j *simJob, e lifecycle.Lease, tries int) {
	host := w.byID[e.Host]
	c := leaseCall{eff: e, tries: tries + 1}
	if !w.send(int(j.sub), int(host), evLeaseReq, j.idx, c) {
		c.err = fmt.Errorf("no reply from %s", e.Host)
		w.push(callTimeout, evLeaseReply, j.sub, j.idx, c)
	}
}

func (w *World) onLeaseReply(e event) {
	j := w.jobs[e.job]
	if j.gone {
		return
	}
	c := e.data.(leaseCall)
	if c.err != nil && c.eff.GiveBack && c.tries < giveBackTries {
		w.tracef(e, "%s %s: again", c.eff.Req.Op, c.eff.Req.Lease)
		w.sendLease(j, c.eff, c.tries)
		return
	}
	w.tracef(e, "%s %s ok=%v err=%v %s", c.eff.Req.Op, c.eff.Req.Lease, c.reply.OK, c.err != nil, c.reply.Error)
	if c.reply.Lease != "" {
		j.leases[c.reply.Lease] = w.byID[c.eff.Host]
	}
	w.step(j, lifecycle.LeaseReply{Host: c.eff.Host, Op: c.eff.Req.Op, Lease: c.eff.Req.Lease, Reply: c.reply, Err: c.err})
}

// reportIn is a host's report on its way to the submitter.
type reportIn struct {
	from  int32
	lease string
	rep   proto.Report
}

func (w *World) onReport(e event) {
	j := w.jobs[e.job]
	r := e.data.(reportIn)
	j.heard[r.lease] = w.now
	w.tracef(e, "from a%d %s %s seq %d rank %d code %d", r.from, r.lease, r.rep.Kind, r.rep.Seq, r.rep.Rank, r.rep.Code)
	if w.refuses(j, r.lease) {
		w.refuse(j, r.from, r.lease, 0)
		return
	}
	w.step(j, lifecycle.Report{From: w.agents[r.from].id, Lease: r.lease, Report: r.rep})
	if r.rep.Kind == proto.RepDone {
		if p := w.agents[r.from].parts[r.lease]; p != nil {
			w.send(int(j.sub), int(r.from), evAck, j.idx, p)
		}
	}
}

// refuses says whether j's submitter refuses the reports of lease: it
// is gone, counted the host lost, or runs an attempt without it.
func (w *World) refuses(j *simJob, lease string) bool {
	return j.gone || j.refused[lease] || j.current != nil && !j.current[lease]
}

// refuseStream: the report stream of lease, not the job's now, is
// refused at the host's next heartbeat (within 2 s), if it gets there; the
// worker then ends the job's processes.
func (w *World) refuseStream(j *simJob, l string) {
	h, ok := j.leases[l]
	if !ok || w.agents[h].parts[l] == nil {
		return
	}
	w.refuse(j, h, l, time.Duration(w.rng.Int64N(int64(2*time.Second))))
}

// refuse answers a stream of lease on host h with a refusal after wait:
// the worker ends the job's processes there.
func (w *World) refuse(j *simJob, h int32, l string, wait time.Duration) {
	if !w.reachable(int(j.sub), int(h)) {
		return
	}
	c := leaseCall{eff: lifecycle.Lease{Host: w.agents[h].id, Req: proto.LeaseRequest{Op: proto.OpKill, Job: j.id, Lease: l,
		Reason: "refused"}}, tries: -1}
	w.push(wait+w.delay(int(j.sub), int(h)), evLeaseReq, h, j.idx, c)
}
