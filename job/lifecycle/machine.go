package lifecycle

import (
	"fmt"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

var log = logging.Logger("zorilla/lifecycle")

// phase is where the machine is in a job's life, finer than the record's
// state: the steps that wait for replies are phases of their own, so that
// nothing the machine waits for ever holds up the inputs that come
// meanwhile.
type phase int

const (
	idle          phase = iota // not begun
	reserving                  // flooding and collecting offers
	committing                 // commits sent; waiting for every reply
	watching                   // the two-phase start, then the run
	stoppingStart              // a failed start's kills and retries sent; waiting for every reply
	settling                   // the run ended; waiting for the checkpoint writer
	killing                    // the run ended; waiting for the kills' replies
	pausing                    // a restart's backoff, or a start waiting for a lost host's fence
	reattaching                // a re-attached job's hosts asked whether they still run it
	over                       // ended: only give-backs and answers go out
)

var phaseNames = [...]string{"idle", "reserving", "committing", "watching", "stopping-start", "settling",
	"killing", "pausing", "reattaching", "over"}

func (p phase) String() string { return phaseNames[p] }

// Start is what a machine begins from.
type Start struct {
	// Record is the job's record: new (Waiting), stopped (a resume), or
	// running (a job re-attached after its agent restarted).
	Record job.Record
	// YieldTo are the jobs a host swapped this one out for, when this run
	// resumes it: its adverts ask its hosts to serve them first.
	YieldTo []job.ID
	// MinDeadline lengthens the scheduling deadline of a job resumed after
	// a preemption: the job that took its hosts may run for a while.
	MinDeadline time.Duration
	// Avoid are hosts to keep the job off (`zorilla resume --elsewhere`).
	Avoid []peer.ID
	// Journal is what the job's report journal held, for a re-attach.
	Journal Journal
}

// Journal is what a job's report journal says of its run's hosts after
// its agent restarted: by lease, the last report taken, and whether the
// host said it was done, or had every copy in mpi.Init.
type Journal struct {
	Seq   map[string]uint64
	Done  map[string]bool
	Ready map[string]bool
}

// Machine is one job's life on its submitter, from the first advert to
// the exit status, as a pure state machine: Step takes an input and
// returns what to do. It has no clock (every input carries its time), no
// goroutine, no channel and no I/O; its executor performs the effects and
// feeds their outcomes back as inputs, one at a time.
type Machine struct {
	cfg Config
	env Env
	rec job.Record

	phase phase
	now   time.Time
	in    Input
	out   []Effect

	yieldTo     []job.ID
	minDeadline time.Duration
	journal     Journal
	avoid       map[peer.ID]time.Time
	note        string               // why the next state change happens (a retry's reason)
	exitCode    int                  // the job's exit status so far: the first non-zero rank's
	outputs     map[string]string    // output file name -> the copy that sends it (host/replica)
	arriving    map[uint64]bool      // offers arrived and being measured, by token
	returning   map[string]bool      // leases given back whose answer a new flood waits for
	usable      map[string]time.Time // when each offer held stops counting, by lease (usableUntil)
	cancel      string               // a cancel the current phase could not act on at once
	lost        []job.LostCopy       // copies lost by the current run
	shutdown    bool                 // the agent is stopping

	res      *reservation
	rlist    []job.Offer // the latency-sorted offers held
	declined declines    // who declined the current flood, and why
	plan     job.Plan    // the plan of the current start
	kept     map[peer.ID]string
	run      *attempt
	ending   *ending
	pauseTo  time.Time
	// fences is, for each host given up on, when it has surely frozen
	// the job's processes (fence.go); deferred is a start that waits for
	// the last of them.
	fences   map[peer.ID]time.Time
	deferred *job.Plan

	lastResize time.Time // when the job last changed size
}

// New returns the machine of one job; Step(Begin) starts it.
func New(cfg Config, env Env, st Start) *Machine {
	m := &Machine{cfg: cfg, env: env, rec: st.Record, yieldTo: st.YieldTo, minDeadline: st.MinDeadline,
		journal: st.Journal, avoid: map[peer.ID]time.Time{}, outputs: map[string]string{}, arriving: map[uint64]bool{},
		kept: map[peer.ID]string{}, usable: map[string]time.Time{}, fences: map[peer.ID]time.Time{}}
	for _, p := range st.Avoid {
		m.avoid[p] = time.Time{} // filled in at Begin, when the machine first knows the time
	}
	return m
}

// Record is the job's record as the machine keeps it.
func (m *Machine) Record() job.Record { return m.rec }

// Ended reports whether the machine is over.
func (m *Machine) Ended() bool { return m.phase == over }

// Reserving reports whether the machine takes offers (its inputs should
// then carry the agent's overlay view).
func (m *Machine) Reserving() bool { return m.phase == reserving }

// TakesOffers reports whether an offer would be considered now: while
// the machine reserves, or while a malleable job looks for more hosts.
func (m *Machine) TakesOffers() bool {
	return m.phase == reserving || m.phase == watching && m.run.grow != nil
}

// Watching reports whether the machine watches a run (its Ticks should
// then carry when each host was last heard from).
func (m *Machine) Watching() bool { return m.phase == watching }

// Phase names the step of the job's life the machine is in.
func (m *Machine) Phase() string { return m.phase.String() }

// Step takes one input and returns the effects it calls for, in order.
func (m *Machine) Step(in Input) []Effect {
	m.now, m.in, m.out = in.Now, in, nil
	if m.phase == over {
		m.afterEnd(in.Event)
		return m.effects()
	}
	switch e := in.Event.(type) {
	case Begin:
		m.begin()
	case Tick:
		m.tick()
	case Cancel:
		m.onCancel(e.Why)
	case Shutdown:
		m.onShutdown()
	case Stop:
		m.onStop(e)
	case GiveWay:
		m.onGiveWay(e)
	case Offer:
		m.onOffer(e)
	case Arrived, OfferDropped, Decline, Flooded, DirectFailed:
		m.reservationEvent(e)
	case LeaseReply:
		m.onLeaseReply(e)
	case Report:
		m.onReport(e)
	case StreamEnded:
		m.onStreamEnded(e)
	case CheckpointFiles:
		m.onCheckpointFiles(e)
	default:
		panic(fmt.Sprintf("lifecycle: unknown event %T", e))
	}
	return m.effects()
}

func (m *Machine) effects() []Effect {
	out := m.out
	m.out = nil
	return out
}

// Deadline is when the machine next needs a Tick, false when no timer is
// armed.
func (m *Machine) Deadline() (time.Time, bool) {
	var ts []time.Time
	switch m.phase {
	case reserving:
		ts = append(m.res.timers(), m.nextExpiry())
	case watching:
		ts = append(m.run.timers(), m.growTimers()...)
	case pausing:
		if len(m.returning) == 0 {
			ts = []time.Time{m.pauseTo}
		}
	}
	var first time.Time
	for _, t := range ts {
		if !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first, !first.IsZero()
}

func (m *Machine) tick() {
	switch m.phase {
	case reserving:
		m.reservationTick()
	case watching:
		m.watchTick()
	case pausing:
		m.resumeReserving()
	}
}

// emit queues an effect.
func (m *Machine) emit(e Effect) { m.out = append(m.out, e) }

// notice tells the job's watchers one line of the submitter's own.
func (m *Machine) notice(line string) {
	m.emit(Notify{job.Update{Kind: "output", Rank: -1, Stream: "stderr", Line: line}})
}

// setState moves the job's record to st, saves it and tells watchers.
func (m *Machine) setState(st job.State, why string) {
	rec, err := job.Transition(m.rec, st, m.now, why)
	if err != nil {
		log.Warnw("illegal job transition", "job", m.rec.ID, "err", err)
		return
	}
	m.rec = rec
	m.emit(Save{})
	m.emit(Notify{job.Update{Kind: "state", State: st, Note: why}})
}

// takeNote returns and clears the reason kept for the next state change.
func (m *Machine) takeNote() string {
	n := m.note
	m.note = ""
	return n
}

// lease sends one lease request.
func (m *Machine) lease(host peer.ID, req proto.LeaseRequest) {
	req.Job = m.rec.ID
	m.emit(Lease{Host: host, Req: req})
}

// cancelLeases gives back offers that will not be used.
func (m *Machine) cancelLeases(offers []job.Offer) {
	for _, o := range offers {
		m.emit(Lease{Host: o.Peer, Req: proto.LeaseRequest{Op: proto.OpCancel, Job: m.rec.ID, Lease: o.Lease}, GiveBack: true})
	}
}

// deadline is the job's scheduling deadline.
func (m *Machine) deadline() time.Duration {
	d := m.cfg.Deadline
	if m.rec.Desc.Deadline > 0 {
		d = m.rec.Desc.Deadline
	}
	return max(d, m.minDeadline)
}

// avoidHosts keeps hosts that failed this job out of its next matches.
func (m *Machine) avoidHosts(hosts []peer.ID) {
	until := m.now.Add(m.cfg.Unavailable)
	for _, p := range hosts {
		if _, known := m.avoid[p]; !known && len(m.rec.Unavailable) < job.MaxUnavailable {
			m.rec.Unavailable = append(m.rec.Unavailable, p)
		}
		m.avoid[p] = until
	}
}

// avoided reports whether p is to be kept off the job now.
func (m *Machine) avoided(p peer.ID) bool {
	until, bad := m.avoid[p]
	return bad && m.now.Before(until)
}
