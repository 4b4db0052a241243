package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// offerIn is an offer handed to a session, with where to send the answer.
type offerIn struct {
	from  peer.ID
	msg   proto.OfferMsg
	rtt   time.Duration
	reply chan proto.OfferReply
}

// declineIn is a worker's decline handed to a session.
type declineIn struct {
	from peer.ID
	msg  proto.DeclineMsg
}

// session is one job on its submitter. Its run goroutine alone owns the
// state below; offers, events and cancels reach it through channels.
type session struct {
	s   *Submitter
	id  ID
	key Key
	sub Submission

	offers   chan offerIn
	arrivals chan peer.ID // offers that reached the submitter and are being measured (handOffer)
	declines chan declineIn
	// pending counts offers that reached the submitter and are not in
	// offers yet (their sender's RTT is being measured): a radius whose
	// offers are still on their way has not brought "no new offer". The
	// one shared counter of the session, hence atomic.
	pending atomic.Int32
	// reserving is set while the run loop takes offers: an offer that
	// comes at another time (a busy worker's queue serving the job after
	// it found enough elsewhere) is refused at once, so the worker offers
	// its slots to the next job in its queue without waiting.
	reserving atomic.Bool
	events    chan reportIn
	cancel    chan string
	stopReq   chan stopReq // stops with a checkpoint (stop.go)
	// yieldTo are the jobs a host swapped this one out for, when this
	// run resumed it (the one it made room for first, then the rest of
	// that turn's set): its adverts say so (Need.YieldTo, YieldWith).
	yieldTo []ID
	// minDeadline lengthens the scheduling deadline of a job resumed
	// after a preemption (preempt.go).
	minDeadline time.Duration
	ctx         context.Context
	stop        context.CancelFunc

	rec      Record
	rlist    []Offer
	declined declines             // who declined the current flood, and why
	hosts    map[peer.ID]*hostRun // the hosts of the current start attempt
	kept     map[peer.ID]string   // after a failed start: the new lease key of each host that kept its slots
	avoid    map[peer.ID]time.Time
	exitCode int
	note     string     // why the next state change happens (a retry's reason)
	lost     []LostCopy // copies lost by the current start while it ran

	reports reportStates // what each host's report stream needs to know
	journal *journal     // the reports taken, for a restart of this agent
	resumed journalState // a re-attached job: what its journal held

	feed    *feed
	files   map[string]*os.File // the job folder's stdout and stderr
	outputs map[string]string   // output file name in the job folder -> the copy that sends it (host/replica)

	ckw    *ckptWriter // writes the checkpoint files arriving; nil until the first chunk
	grants grants      // checkpoint files the hosts may fetch
}

// run drives the job through its states until it ends. What a failure
// triggers (retry on the spares, match again, fail) is Recover's decision.
func (ss *session) run(resumed bool) {
	defer ss.stop()
	ss.finish(ss.attempts(resumed))
}

// attempts matches and starts the job until it ends; a resumed job first
// re-attaches to the run its record holds.
func (ss *session) attempts(resumed bool) error {
	var plan Plan
	match := true
	if resumed {
		plan, match = *ss.rec.Plan, false
	}
	for {
		if match {
			var err error
			if plan, err = ss.reserve(); err != nil || ss.sub.DryRun {
				return err
			}
		}
		var err error
		if resumed {
			err, resumed = ss.reattach(plan), false
		} else {
			err = ss.startAndRun(plan)
		}
		if errors.Is(err, errDetached) {
			return err
		}
		ss.endRun(err)
		var f failure
		if !errors.As(err, &f) {
			// Done, or cancelled. Cancelled before it ran, the spares
			// are still reserved: give them back.
			ss.cancelLeases(ss.held(plan))
			return err
		}
		rec := Recover(ss.rec, f.kind, f.hosts, ss.s.cfg.Retry, f.rank, f.code)
		ss.avoidHosts(rec.Unavailable)
		switch rec.Action {
		case RetryStart:
			log.Infow("start failed, retrying on the spares", "job", ss.id, "why", f.why)
			ss.cancelLeases(failedOffers(plan, f.hosts))
			plan, match = ss.withKept(rec.Plan), false
			ss.note = rec.Reason
		case Rematch:
			log.Infow("matching again", "job", ss.id, "why", f.why)
			ss.cancelLeases(ss.held(plan))
			ss.rlist, ss.declined, match = nil, declines{}, true
			ss.note = rec.Reason
			if rec.Restart {
				if err := ss.restart(f, rec); err != nil {
					return err
				}
			}
		default:
			ss.cancelLeases(ss.held(plan))
			if (f.kind == HostLost || f.kind == BadProgram) && rec.Reason != "" {
				f.why += "; " + rec.Reason
			}
			return f
		}
	}
}

// quietAfter is how long after the last answer a radius with no new one
// counts as the flood having reached every agent: answers of a loaded
// network may take longer than the first radii's short waits. While an
// agent this one knows as live has not answered, quietUnheard: its answer
// may be on its way from a loaded host (one of a CI machine's test agents
// answered 2 s after the others, and a job that four agents could hold
// failed as hopeless with three), and a job that waits for nothing only
// fails later.
const (
	quietAfter   = 2 * time.Second
	quietUnheard = 10 * time.Second
)

// quietWait is how long after the last answer the flood counts as having
// reached every agent, unheard telling whether a live peer the agent knows
// has not answered.
func quietWait(unheard bool) time.Duration {
	if unheard {
		return quietUnheard
	}
	return quietAfter
}

// answers counts the agents that answered the flood so far.
func (ss *session) answers() int { return len(ss.rlist) + len(ss.declined.by) }

// notEnough gives back every offer held and says, in the job's record and
// its error, what the flood found: the slots offered against those needed,
// and why the agents that declined did.
func (ss *session) notEnough(why string) error {
	d := ss.sub.Desc
	ss.rec.Offers = append([]Offer(nil), ss.rlist...)
	ss.rec.Declines = ss.declined.counts()
	ss.cancelLeases(ss.rlist)
	err := fmt.Errorf("not enough resources (got %d of %d process slots)", ss.slots(), d.Nodes*d.Replicas)
	if why != "" {
		err = fmt.Errorf("%w: %s", err, why)
	}
	if seen := SeenSummary(ss.rlist, ss.rec.Declines); seen != "" {
		err = fmt.Errorf("%w; %s", err, seen)
	}
	return err
}

func (ss *session) deadline() time.Duration {
	if ss.sub.Desc.Deadline > 0 {
		return max(ss.sub.Desc.Deadline, ss.minDeadline)
	}
	return max(ss.s.cfg.Deadline, ss.minDeadline)
}

// maxOfferAddrs bounds the addresses an offer keeps of its host.
const maxOfferAddrs = 8

// takeOffer adds an offer to rlist (latency-sorted) unless its host is to be
// avoided, and answers the worker.
func (ss *session) takeOffer(o offerIn) {
	if until, bad := ss.avoid[o.from]; bad && time.Now().Before(until) {
		o.reply <- proto.OfferReply{Reason: "host recently failed a start of this job"}
		return
	}
	for _, have := range ss.rlist {
		if have.Peer == o.from {
			o.reply <- proto.OfferReply{Reason: "already holding an offer from this host"}
			return
		}
	}
	// Its addresses go in the record: a restarted agent that re-attaches
	// to the job must reach its hosts before they reach it.
	addrs := ss.s.h.Peerstore().Addrs(o.from)
	if len(addrs) > maxOfferAddrs {
		addrs = addrs[:maxOfferAddrs]
	}
	offer := Offer{Peer: o.from, Lease: o.msg.Lease, Slots: o.msg.Slots,
		Cores: o.msg.Cores, Memory: o.msg.Memory, RTT: o.rtt, Addrs: addrs, Site: proto.SiteName(o.msg.Site),
		Relayed: onlyRelayed(ss.s.h.Network().ConnsToPeer(o.from)), GangFree: o.msg.GangFree}
	ss.rlist = append(ss.rlist, offer)
	ss.declined.offered(o.from)
	OrderRList(ss.rlist, ss.sub.Desc.Prefer)
	if ss.sub.Desc.PMI {
		preferDirect(ss.rlist)
	}
	d := ss.sub.Desc
	if held := MaxHeld(d.Nodes, d.Replicas, ss.s.cfg.Spares); len(ss.rlist) > held {
		// Overbooking is bounded: the farthest offer goes back, and it
		// may be this one.
		worst := ss.rlist[len(ss.rlist)-1]
		ss.rlist = ss.rlist[:len(ss.rlist)-1]
		if worst.Lease == offer.Lease {
			o.reply <- proto.OfferReply{Reason: fmt.Sprintf("the job holds the %d closer offers it can use", held)}
			return
		}
		ss.cancelLater([]Offer{worst})
	}
	o.reply <- proto.OfferReply{Keep: true}
}

// yield gives back the lease held on from when the job cannot be placed
// yet: the worker said an earlier job waits for those slots (Precedes on
// the worker, ShouldYield here). The worker keeps this job in its queue
// and offers again when it can.
func (ss *session) yield(from peer.ID) {
	if !ShouldYield(ss.feasible()) {
		return
	}
	for i, o := range ss.rlist {
		if o.Peer == from {
			ss.rlist = append(ss.rlist[:i], ss.rlist[i+1:]...)
			log.Debugw("giving a contested host to an earlier job", "job", ss.id, "host", from)
			ss.cancelLeases([]Offer{o})
			// The host answered, and keeps the job in its line: it
			// counts as a decline that may pass (Hopeless), not as a
			// host that never answered the flood.
			ss.declined.add(from, proto.DeclineMsg{Job: ss.id, Code: proto.DeclineYield})
			return
		}
	}
}

// feasible reports whether the offers so far can hold the job.
func (ss *session) feasible() bool {
	d := ss.sub.Desc
	slist, _ := SelectHosts(ss.rlist, d.Nodes, d.Replicas)
	return Feasible(slist, d.Nodes, d.Replicas) == nil
}

// slots counts the process slots offered so far (c_i summed), for the
// "not enough resources" report.
func (ss *session) slots() int {
	total := 0
	for _, o := range ss.rlist {
		total += Capacity(o, ss.sub.Desc.Nodes)
	}
	return total
}

// place runs the placement and cancels the offers it does not use, keeping a
// few spares reserved for a failing commit.
func (ss *session) place() (Plan, error) {
	d := ss.sub.Desc
	var (
		plan Plan
		err  error
	)
	if d.PMI {
		plan, err = PlacePMI(d.Strategy, ss.rlist, d.Nodes)
	} else {
		plan, err = Place(d.Strategy, ss.rlist, d.Nodes, d.Replicas)
	}
	if err != nil {
		ss.cancelLeases(ss.rlist)
		return Plan{}, err
	}
	ss.rec.Offers = append([]Offer(nil), ss.rlist...)
	ss.rec.Declines = ss.declined.counts()
	if ss.sub.DryRun {
		ss.rec.Plan = &plan
		ss.cancelLater(ss.rlist)
		return plan, nil
	}
	sort.SliceStable(plan.Cancel, func(i, j int) bool { return plan.Cancel[i].RTT < plan.Cancel[j].RTT })
	spares := min(ss.s.cfg.Spares, len(plan.Cancel))
	ss.cancelLater(plan.Cancel[spares:])
	plan.Cancel = plan.Cancel[:spares:spares] // still reserved: Replan's spares
	return plan, nil
}

// cancelLater gives back offers the plan does not use without holding up
// the job: on a loaded network the cancels of a few hundred offers (sent
// again when one does not get through) took up to 5 s, all of it before
// the plan's start. They go out in the background, on the submitter's
// context, and end on shutdown.
func (ss *session) cancelLater(offers []Offer) {
	if len(offers) == 0 {
		return
	}
	offers = append([]Offer(nil), offers...)
	ss.s.wg.Add(1)
	go func() {
		defer ss.s.wg.Done()
		t0 := time.Now()
		ss.cancelLeases(offers)
		log.Debugw("unused offers cancelled", "job", ss.id, "offers", len(offers), "took", time.Since(t0))
	}()
}

func planOffers(p Plan) []Offer {
	out := make([]Offer, len(p.Hosts))
	for i, h := range p.Hosts {
		out[i] = h.Offer
	}
	return out
}
