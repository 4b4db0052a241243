package lifecycle

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
)

// hostRun is the machine's view of one host during a start attempt.
type hostRun struct {
	plan    job.HostPlan
	started bool   // every local copy's process runs
	ready   bool   // phase one is done here: every local copy is in mpi.Init
	done    bool   // the host reported its end, was killed, or was lost
	seq     uint64 // the last numbered report taken
	frozen  bool   // its processes are stopped in place (RepFrozen)
	// spared: it refused its commit, so runs nothing of this attempt
	// (it needs no fence).
	spared bool
}

// attempt is one start of the job on the hosts of a plan, from the commits
// to its end.
type attempt struct {
	plan     job.Plan
	hosts    map[peer.ID]*hostRun
	order    []peer.ID // the hosts in the plan's order: effects never follow a map's
	awaiting map[peer.ID]bool
	refused  []peer.ID // hosts whose commit (or resume) failed
	asked    int       // hosts asked whether they still run a re-attached job
	// resumeAsked counts, by host, the OpResume asked again after one
	// went unanswered.
	resumeAsked map[peer.ID]int
	backlog     []Event   // reports that came while the commits were out
	running     bool      // every host started: the record says Running
	released    bool      // phase two: the ranks were released from mpi.Init
	finished    bool      // every host is done
	lost        []peer.ID // hosts lost while running
	quiet       *silences
	stop        *stopping // a stop with a checkpoint under way
	grow        *growSearch
	resize      *resizing // a resize of a malleable job under way
	fallback    *fallback // a start at a new size, until it is released

	// Timers; the zero time is unarmed.
	startBy time.Time // when every host must have started its processes
	initBy  time.Time // when every rank must be in mpi.Init, from the first copy there
	beatAt  time.Time // the next look at the hosts' silence
}

func newAttempt(plan job.Plan) *attempt {
	a := &attempt{plan: plan, hosts: map[peer.ID]*hostRun{}, awaiting: map[peer.ID]bool{}, quiet: newSilences(),
		resumeAsked: map[peer.ID]int{}}
	for _, hp := range plan.Hosts {
		a.hosts[hp.Offer.Peer] = &hostRun{plan: hp}
		a.order = append(a.order, hp.Offer.Peer)
	}
	return a
}

func (a *attempt) timers() []time.Time {
	ts := []time.Time{a.initBy, a.beatAt}
	if !a.running {
		ts = append(ts, a.startBy)
	}
	if a.stop != nil {
		ts = append(ts, a.stop.by)
	}
	return ts
}

// leases lists the attempt's leases, in the plan's order.
func (a *attempt) leases() []string {
	out := make([]string, len(a.order))
	for i, p := range a.order {
		out[i] = a.hosts[p].plan.Offer.Lease
	}
	return out
}

// all reports whether f holds for every host.
func (a *attempt) all(f func(*hostRun) bool) bool {
	for _, p := range a.order {
		if !f(a.hosts[p]) {
			return false
		}
	}
	return true
}

// where lists the hosts for which f holds, in the plan's order.
func (a *attempt) where(f func(*hostRun) bool) []peer.ID {
	var out []peer.ID
	for _, p := range a.order {
		if f(a.hosts[p]) {
			out = append(out, p)
		}
	}
	return out
}

// outcome is how a run or a match ended.
type outcome struct {
	kind   outcomeKind
	fail   job.Failure // outFailed: what failed, for Recover
	why    string      // cancelled, fatal: the reason; stopped: the stop's words
	num    uint64      // stopped: the checkpoint it stopped with
	token  uint64      // stopped: the Stop to answer
	reason string      // stopped by a preemption: its reason
}

type outcomeKind int

const (
	outDone   outcomeKind = iota // every copy exited 0
	outFailed                    // a failure Recover decides about
	outFatal                     // a failure that ends the job as it is
	outCancelled
	outStopped
	outDetached
	outResized // a malleable job's run stopped at a quiet checkpoint for a resize
)

func done() outcome                { return outcome{kind: outDone} }
func failed(f job.Failure) outcome { return outcome{kind: outFailed, fail: f, why: f.Why} }
func fatal(why string) outcome     { return outcome{kind: outFatal, why: why} }
func cancelled(why string) outcome { return outcome{kind: outCancelled, why: why} }
func detached() outcome            { return outcome{kind: outDetached} }

// ending is a run's end under way: the outcome, while the checkpoint
// writer settles and the kills are answered.
type ending struct {
	out outcome
}
