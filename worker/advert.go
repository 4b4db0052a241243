package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// OnAdvert is the flood's delivery hook: decide locally, and if the job is
// welcome, reserve slots and offer them to the submitter.
func (s *Service) OnAdvert(_ context.Context, a flood.Advert) {
	need, err := proto.DecodeNeed(a.Body)
	if err != nil {
		s.abuse.refused.Add(RefusedBadAdvert)
		log.Debugw("advert with a bad need", "job", a.Job, "err", err)
		return
	}
	if !proto.IsFloodKeyOf(a.Job, need.Job) {
		s.abuse.refused.Add(RefusedBadAdvert)
		log.Debugw("advert job ID does not match its need", "advert", a.Job, "need", need.Job)
		return
	}
	select {
	case s.offers <- struct{}{}:
	default:
		s.abuse.refused.Add(RefusedOffersInFlight)
		log.Debugw("too many offers in flight, advert dropped", "job", a.Job)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.offers }()
		s.offer(a, need)
	}()
}

// advertView is what the worker knows of an advert's job before it asks
// the lease table: decideAdvert reads nothing else.
type advertView struct {
	Held        bool // the job holds a lease here
	Committed   bool // ... and runs here under it
	Draining    bool
	MaxJobProcs int // AbuseLimits.MaxJobProcs
}

// advertStep is what decideAdvert says to do with an advert.
type advertStep struct {
	Note    bool     // list the job in the waiting line, or refresh it there
	Admit   bool     // ask the lease table for an offer
	Decline Decision // tell the submitter why not (an empty Code: nothing)
	Refused string   // count a refusal under this reason
}

// decideAdvert decides what an advert of need does before the lease table
// is asked. A job holding a lease here gets no second one: it is only
// refreshed in the line (a wider flood: a fresher copy), and told this
// host is busy when an earlier run of it still ends here (it is flooded
// again for a restart, and waits for the slots that run frees). Pure.
func decideAdvert(v advertView, need proto.Need) advertStep {
	switch {
	case v.Held && v.Committed:
		return advertStep{Note: true, Decline: Decision{Code: proto.DeclineBusy, Detail: "its earlier run is still ending here"}}
	case v.Held:
		return advertStep{Note: true}
	case v.Draining:
		return advertStep{Refused: RefusedDraining, Decline: Decision{Code: proto.DeclineDraining}}
	case need.N*need.R > v.MaxJobProcs:
		return advertStep{Refused: RefusedJobTooLarge,
			Decline: Decision{Code: proto.DeclineSize, Detail: fmt.Sprintf("n*r<=%d", v.MaxJobProcs)}}
	}
	return advertStep{Note: true, Admit: true}
}

// refusalStep is what the worker does with an advert the lease table (or
// the line ahead of it) refused.
type refusalStep struct {
	Count   bool // count a policy refusal (RefusedPolicy)
	Drop    bool // the job leaves the waiting line: waiting for slots will not help
	Decline bool // tell the submitter the decision's reason
	Contend bool // ask later jobs holding the slots to yield them, and plan preemptions
}

// afterRefusal decides on an advert refused by decision d, or accepted
// and not reserved (err: the job got a lease meanwhile). Only a refusal
// for lack of free slots keeps the job in the line, and a job listed
// there contends for the slots unless it was swapped out here for a job
// still waiting (yielding): it asks nothing of that job. Pure.
func afterRefusal(d Decision, err error, listed, yielding bool) refusalStep {
	return refusalStep{
		Count:   !d.Accept,
		Drop:    !d.Full,
		Decline: err == nil,
		Contend: d.Full && listed && !yielding,
	}
}

// behindHigher refuses an advert, as full, that must wait for others: its
// job was swapped out here for a job still waiting (yielding), or a job
// of higher honoured priority than its own waits for this host (top,
// when waiting). Pure.
func behindHigher(yielding bool, top int, waiting bool, honoured int) (Decision, bool) {
	if yielding {
		return full(refuse(proto.DeclineBusy, "", "swapped out here for a job that has not started yet")), true
	}
	if waiting && top > honoured {
		return full(refuse(proto.DeclineBusy, "", "a job of higher priority (%d) waits for this host", top)), true
	}
	return Decision{}, false
}

// offer reserves a lease for need and sends it to the submitter; a lease the
// submitter does not keep is released at once. An advert refused only for
// lack of free slots waits in the line (waitq.go), and asks the later jobs
// holding slots here to give them back.
func (s *Service) offer(a flood.Advert, need proto.Need) {
	honoured := s.leases.Policy().HonouredPriority(a.Submitter, need.Priority)
	l, held := s.leases.ByJob(need.Job)
	step := decideAdvert(advertView{Held: held, Committed: l.Committed, Draining: s.draining.Load(),
		MaxJobProcs: s.cfg.Abuse.MaxJobProcs}, need)
	if step.Refused != "" {
		s.abuse.refused.Add(step.Refused)
	}
	var prio Seniority
	var listed bool
	if step.Note {
		prio, listed = s.waiting.note(a, need, honoured, time.Now())
		s.noteYield(a, need, listed)
	}
	if !step.Admit {
		log.Debugw("advert not admitted", "job", need.Job, "host", s.h.ID(), "flood", a.Job, "held", held,
			"committed", l.Committed, "decline", step.Decline.Code)
		s.decline(a, need.Job, step.Decline)
		return
	}
	yielding := s.yields(need.Job)
	d, l, err := s.admitBehindHigher(a.Submitter, need, honoured, yielding)
	if !d.Accept || err != nil {
		s.refused(a, need, afterRefusal(d, err, listed, yielding), d, err,
			Contender{Submitter: a.Submitter, Need: need, Since: prio, Honoured: honoured})
		return
	}
	if !s.abuse.allowOffer(a.Submitter, time.Now()) {
		log.Debugw("over the offer rate to this submitter", "job", need.Job, "submitter", a.Submitter)
		s.endLease(l.Key)
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if !s.sendOffer(ctx, a, need, l) {
		s.waiting.drop(need.Job)
	}
}

// refused carries out step for an advert refused by d (or err).
func (s *Service) refused(a flood.Advert, need proto.Need, step refusalStep, d Decision, err error, c Contender) {
	if step.Count {
		s.abuse.refused.Add(RefusedPolicy)
	}
	if step.Drop {
		s.waiting.drop(need.Job)
	}
	log.Debugw("advert refused", "job", need.Job, "host", s.h.ID(), "reason", d.Reason, "err", err, "waiting", !step.Drop)
	if step.Decline {
		s.decline(a, need.Job, d)
	}
	if step.Contend {
		s.askYield(c)
		s.preemptForWaiting()
	}
}

// admitBehindHigher admits an advert unless it must wait behind others
// (behindHigher): then it is refused as full, and waits in its turn.
func (s *Service) admitBehindHigher(submitter peer.ID, need proto.Need, honoured int, yielding bool) (Decision, Lease, error) {
	top, waiting := 0, false
	if !yielding {
		top, waiting = s.waiting.highestWaiting(need.Job, s.leases, time.Now())
	}
	if d, wait := behindHigher(yielding, top, waiting, honoured); wait {
		return d, Lease{}, nil
	}
	return s.leases.Admit(submitter, need, leaseTTL(need))
}

// noteYield marks a listed job whose advert says it was swapped out for
// others (Need.YieldTo, YieldWith) as yielding to them here: so does every
// host of its run, including those whose own plan did not swap it out.
func (s *Service) noteYield(a flood.Advert, need proto.Need, listed bool) {
	if listed && need.YieldTo != "" {
		s.waiting.yieldTo(need.Job, append([]proto.JobID{need.YieldTo}, need.YieldWith...), a.Job)
	}
}

// sendOffer offers lease l to the submitter of advert a and reports
// whether it kept it; a lease not kept is released.
func (s *Service) sendOffer(ctx context.Context, a flood.Advert, need proto.Need, l Lease) bool {
	if a.Submitter != s.h.ID() {
		s.h.Peerstore().AddAddrs(a.Submitter, a.Addrs, peerstore.TempAddrTTL)
	}
	msg := proto.OfferMsg{Job: need.Job, Lease: l.Key, Slots: l.Slots, Cores: l.Cores, Memory: l.Memory, Expires: l.Expires,
		Site: proto.SiteLabel(s.leases.Policy().Labels), GangFree: s.gangFree()}
	var reply proto.OfferReply
	err := s.ep.Call(ctx, a.Submitter, proto.OfferProtocol, msg, &reply, proto.MaxReplySize)
	if err != nil || !reply.Keep {
		log.Debugw("offer not kept", "job", need.Job, "host", s.h.ID(), "err", err, "reason", reply.Reason)
		s.endLease(l.Key)
		return false
	}
	log.Debugw("offer kept", "job", need.Job, "host", s.h.ID(), "flood", a.Job)
	// Asks to yield this lease held back while its offer was on the way
	// go now: they can no longer overtake it.
	s.leases.MarkHeld(l.Key)
	s.askForLine()
	return true
}

// endLease gives back a lease; a lease already gone is fine.
func (s *Service) endLease(key string) {
	if _, err := s.leases.End(key); err != nil {
		log.Debugw("release", "err", err)
	}
}
