package sim

import "time"

// kind is what an event is.
type kind uint8

const (
	evSubmit     kind = iota // a job is submitted at its agent
	evTick                   // a job's machine has a timer due
	evAdvert                 // an advert reaches an agent's worker
	evOffer                  // an offer reaches the submitter (Arrived)
	evMeasured               // the submitter has measured the offer's sender (Offer)
	evOfferReply             // the submitter's answer to an offer reaches the worker
	evDecline                // a decline reaches the submitter
	evLeaseReq               // a lease request reaches a worker
	evLeaseReply             // a lease reply (or its failure) reaches the submitter
	evReport                 // a host's report reaches the submitter
	evStaged                 // a host has staged a job and started its processes
	evReady                  // a host's processes are all in mpi.Init
	evExit                   // a process ends
	evGrace                  // a host checks whether its job's submitter is still away
	evCrash                  // an agent crashes
	evRestart                // an agent restarts
	evCut                    // a site is cut off
	evHeal                   // a site is back
	evSubCrash               // a job's submitter's agent crashes
	evForge                  // a liar floods a forged advert
	evAck                    // the submitter took a host's done report
	evFlood                  // a flood's radius went out (traced, never queued)
	evFence                  // a host checks whether its job's fence has closed
	evThaw                   // a host whose fence closed hears from the submitter again
	numKinds
)

var kindNames = [...]string{"submit", "tick", "advert", "offer", "measured", "offer-reply", "decline", "lease-req",
	"lease-reply", "report", "staged", "ready", "exit", "grace", "crash", "restart", "cut", "heal", "sub-crash", "forge", "ack", "flood", "fence", "thaw"}

func (k kind) String() string { return kindNames[k] }

// event is one thing that happens at a virtual time. Agent and job are
// indexes (-1: none); epoch is the agent's incarnation when the event was
// made, so that what a crashed agent had under way is dropped.
type event struct {
	at    time.Duration
	seq   uint64
	kind  kind
	agent int32
	job   int32
	epoch uint32
	data  any
}

// queue is a binary heap of events by time, ties by sequence: the order
// events were made, so equal times never depend on anything else.
type queue struct {
	ev   []event
	seq  uint64
	peak int
}

func (q *queue) less(i, j int) bool {
	a, b := &q.ev[i], &q.ev[j]
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

func (q *queue) push(e event) {
	q.seq++
	e.seq = q.seq
	q.ev = append(q.ev, e)
	i := len(q.ev) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.ev[i], q.ev[p] = q.ev[p], q.ev[i]
		i = p
	}
	q.peak = max(q.peak, len(q.ev))
}

func (q *queue) pop() event {
	top := q.ev[0]
	last := len(q.ev) - 1
	q.ev[0] = q.ev[last]
	q.ev[last] = event{}
	q.ev = q.ev[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && q.less(l, m) {
			m = l
		}
		if r < last && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.ev[i], q.ev[m] = q.ev[m], q.ev[i]
		i = m
	}
	return top
}

func (q *queue) len() int { return len(q.ev) }
