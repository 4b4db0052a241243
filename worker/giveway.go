package worker

import (
	"context"
	"sort"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Giving way. A malleable job (proto.Need.Min > 0) that holds slots here
// while a job of equal or higher priority waits for them is asked to give
// way: to shrink at its next quiet checkpoint, giving back this host. Its
// submitter says at once whether it will (it keeps at least its least
// size, and shares what it holds in equal parts with the jobs that wait);
// the slots come back when its lease here ends, and the line offers them.
// A job that only grows (proto.Need.Grow) never makes another give way.

// GiveWayAsk is one malleable job this host asks to give way, and the
// waiting job it would let in.
type GiveWayAsk struct {
	Job proto.JobID
	For Waiter
}

// PlanGiveWay returns the asks this host makes for its line: for each job
// waiting to start, in line order, refused here for lack of room, the
// first malleable job running here (lowest priority, then latest) of a
// priority no higher than the waiting job's whose room would let it in.
// Each malleable job is asked once, for the first job it would let in.
// Pure.
func PlanGiveWay(p Policy, u Usage, holders []Holder, line []Waiter) []GiveWayAsk {
	var out []GiveWayAsk
	asked := map[proto.JobID]bool{}
	for _, w := range line {
		if w.Need.Grow || Decide(p, u, w.Submitter, w.Need).Accept {
			continue
		}
		prio := p.HonouredPriority(w.Submitter, w.Need.Priority)
		for _, h := range malleable(holders, asked, prio, w.Need.Job) {
			if Decide(p, freed(u, h), w.Submitter, w.Need).Accept {
				out = append(out, GiveWayAsk{Job: h.Job, For: w})
				asked[h.Job] = true
				break
			}
		}
	}
	return out
}

// malleable are the holders that can give way to a job of priority
// prio and were not asked yet: lowest priority first, then the latest.
func malleable(hs []Holder, asked map[proto.JobID]bool, prio int, self proto.JobID) []Holder {
	var out []Holder
	for _, h := range hs {
		if h.Malleable && !h.Preempted && !h.Leaving && !asked[h.Job] && h.Priority <= prio && h.Job != self {
			h.Checkpoint = true // it gives back its memory with its slots
			out = append(out, h)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority < out[j].Priority
		}
		return Precedes(out[j].Since, out[i].Since)
	})
	return out
}

// askGiveWay asks r's submitter to give way for w; a refusal leaves the
// job a candidate again.
func (s *Service) askGiveWay(r *running, w Waiter) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	msg := proto.PreemptMsg{Job: r.id, Lease: r.lease, For: w.Need.Job, GiveWay: true, N: w.Need.N, Min: w.Need.Min,
		Priority: s.leases.Policy().HonouredPriority(w.Submitter, w.Need.Priority)}
	var reply proto.PreemptReply
	err := s.ep.Call(ctx, r.submitter, proto.PreemptProtocol, msg, &reply, proto.MaxPreemptSize)
	if err != nil || !reply.GivingWay {
		log.Infow("malleable job does not give way", "job", r.id, "for", w.Need.Job, "err", err, "reason", reply.Reason)
		r.pre.preempted.Store(false)
		return
	}
	r.pre.gaveWayAt.Store(time.Now().UnixNano())
	log.Infow("malleable job gives way", "job", r.id, "for", w.Need.Job, "host", s.h.ID())
}

// GiveWayPatience is how long a host waits for a malleable job that said
// it gives way to end its run here. The job shrinks at its next quiet
// checkpoint or gives up after its submitter's resize timeout (two
// minutes by default), and it may give back other hosts than this one;
// past this the job is a candidate here again, to give way or be
// preempted, instead of being left alone for the rest of its run.
const GiveWayPatience = 3 * time.Minute

// lapseGiveWay makes a job that said it gives way, and still runs here
// GiveWayPatience later, a candidate again; it says whether it did.
func (p *preemptState) lapseGiveWay(now time.Time) bool {
	at := p.gaveWayAt.Load()
	if at == 0 || now.Sub(time.Unix(0, at)) < GiveWayPatience {
		return false
	}
	if !p.gaveWayAt.CompareAndSwap(at, 0) {
		return false
	}
	p.preempted.Store(false)
	return true
}
