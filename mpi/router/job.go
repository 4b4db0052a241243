package router

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// procState is where a local copy is in its life.
type procState int

const (
	procWaiting   procState = iota // not connected yet
	procRunning                    // connected (in or past Init)
	procFinalized                  // called Finalize
	procGone                       // aborted, or its connection ended without Finalize
)

// proc is one local copy of a rank.
type proc struct {
	Proc
	q    *outq     // frames towards the process, from AddJob on
	sent sequencer // checks the copy's own sequence numbers; used by its reader goroutine only
	log  *sendLog  // what the copy sent, until every live destination copy has it

	wdone chan struct{} // closed when the writer goroutine has written its last frame and closed the socket

	sendMu   sync.Mutex  // held while the copy's frames are transmitted, so a takeover's resend is not overtaken
	transmit atomic.Bool // the copy transmits (it leads its rank, or every copy sends)
	leads    atomic.Bool // the copy leads its rank: its choices are its backups'
	choices  *choices    // its choices not yet held by every live backup's agent
	syncs    *syncAcks   // its acknowledgements of synchronous messages (syncack.go)

	// guarded by Job.mu
	conn  net.Conn
	state procState
}

// Job is one job's router state on this agent. Data moves without a central
// loop: each local copy has a reader goroutine (its socket to the
// destinations) and a writer goroutine (its queue to its socket), each link
// its own goroutines; Job.mu guards the job's control state (copies'
// states, links, failure, removal) and is never held during I/O.
type Job struct {
	r       *Router
	spec    JobSpec
	hosts   [][]peer.ID // hosts[rank][replica]: the agent of that copy (spec.Table by peer)
	self    peer.ID
	cfg     Config
	welcome proto.Frame
	local   []*proc // by rank; nil where the rank has no copy here
	procs   []*proc // every local copy
	remote  []peer.ID
	ctx     context.Context // ends when the job fails or is removed
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the job's goroutines
	// announcing counts the COPYLOST notices still being sent, which
	// shutdown lets finish before the farewell.
	announcing sync.WaitGroup
	events     chan Event
	ready      chan struct{}
	ackNow     chan struct{}           // capacity 1: acknowledge delivery positions now
	ackSoon    chan struct{}           // capacity 1: acknowledge them after the job's ack delay
	ackArmed   atomic.Bool             // an acknowledgement round is due: later deliveries need not ask
	born       time.Time               // when the job was added: the base of the heard stamps
	heard      map[peer.ID]*heardStamp // per remote agent; the map never changes (watch.go)

	mu       sync.Mutex // guards everything below, and procs' conn and state
	attached int
	released bool
	err      *Failure
	removed  bool
	links    map[peer.ID]*link
	inbound  map[*inbound]struct{}
	lost     map[peer.ID]bool // remote agents lost
	lostCopy map[Proc]bool    // copies, here or elsewhere, that ended without Finalize
	ended    map[peer.ID]bool // remote agents that ended the job cleanly
	dropped  int              // events dropped because the channel was full
	shm      *jobShm          // rings between local ranks, or nil (see shm.go)
}

func newJob(r *Router, spec JobSpec) *Job {
	ctx, cancel := context.WithCancel(context.Background())
	hosts := spec.Table.Peers()
	j := &Job{
		r: r, spec: spec, hosts: hosts, self: r.h.ID(), cfg: r.cfg, local: make([]*proc, spec.Size),
		remote: remotes(hosts, r.h.ID()), ctx: ctx, cancel: cancel,
		ready: make(chan struct{}), links: map[peer.ID]*link{}, inbound: map[*inbound]struct{}{},
		lost: map[peer.ID]bool{}, lostCopy: map[Proc]bool{}, ended: map[peer.ID]bool{},
		ackNow: make(chan struct{}, 1), ackSoon: make(chan struct{}, 1),
		born: time.Now(), heard: map[peer.ID]*heardStamp{},
	}
	for _, h := range j.remote {
		j.heard[h] = &heardStamp{}
	}
	j.welcome = proto.Welcome{Version: proto.Version, MaxData: uint32(r.cfg.MaxData), HostOf: hostLayout(hosts),
		SiteOf: siteLayout(hosts, spec.Table.Sites())}.Encode()
	for _, p := range spec.Local {
		pr := &proc{Proc: p, q: newOutq(r.cfg.QueueBytes), sent: sequencer{}, log: newSendLog(r.cfg.LogBytes, spec.Replicas),
			wdone: make(chan struct{})}
		pr.q.onAck = j.askAck
		pr.transmit.Store(r.cfg.EveryCopySends || p.Replica == 0)
		pr.leads.Store(p.Replica == 0)
		pr.choices = newChoices()
		pr.syncs = newSyncAcks()
		j.local[p.Rank] = pr
		j.procs = append(j.procs, pr)
	}
	j.shm = newJobShm(spec, r.cfg)
	j.events = make(chan Event, 3*len(j.procs)+len(j.remote)+4)
	if len(j.procs) == 0 {
		close(j.ready)
	}
	j.wg.Add(2)
	go j.ackLoop()
	go j.watchLoop()
	return j
}

// ID is the job's ID.
func (j *Job) ID() string { return j.spec.ID }

// InitReady is closed when every local copy has connected and is waiting in
// Init: phase 1 of the two-phase start is done on this agent.
func (j *Job) InitReady() <-chan struct{} { return j.ready }

// Events reports what happens to the job (see EventKind). It is closed by
// RemoveJob.
func (j *Job) Events() <-chan Event { return j.events }

// Stats are a job's buffer use on this agent.
type Stats struct {
	Queued     int // bytes waiting to be written to local ranks now
	PeakQueued int // most bytes ever waiting for one local rank
}

// Stats reports the job's buffer use: what flow control bounds.
func (j *Job) Stats() Stats {
	var st Stats
	for _, p := range j.procs {
		q, peak := p.q.stats()
		st.Queued += q
		st.PeakQueued = max(st.PeakQueued, peak)
	}
	return st
}

// Err returns why the job failed, or nil.
func (j *Job) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		return nil
	}
	return j.err
}

// failure is why the job failed here, or nil.
func (j *Job) failure() *Failure {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// Release is phase 2: the submitter saw every agent ready, so Init returns
// in every local copy (copies that connect later are released at once).
// The router also opens its links to every other agent of the job, so that
// the loss of any of them is noticed even by ranks that never talked to it.
func (j *Job) Release() {
	start := proto.NewFrame(proto.TypeStart, 0)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.released || j.removed || j.err != nil {
		return
	}
	j.released = true
	j.shm.release()
	for _, p := range j.procs {
		if p.state == procRunning {
			if on := j.shm.onFrame(p.Rank); on != nil { // shared memory: which peers, before Start
				p.q.control(on)
			}
			p.q.control(start)
		}
	}
	for _, h := range j.remote {
		j.linkLocked(h)
	}
}

// Fail fails the job: every blocked and later call in local ranks returns
// an error, and the job's other agents are told so theirs do too.
func (j *Job) Fail(err error) {
	reason := "failed"
	if err != nil {
		reason = err.Error()
	}
	j.fail(&Failure{Cause: proto.CauseFailed, Rank: -1, Reason: reason})
}

// emit sends an event; j.mu is held.
func (j *Job) emit(e Event) {
	if j.removed {
		return
	}
	select {
	case j.events <- e:
	default:
		j.dropped++
		log.Warnf("job %s: event %v dropped (channel full)", j.spec.ID, e.Kind)
	}
}

// fail records the job's failure (the first one wins), tells every local
// copy, then every other agent of the job over every stream it has with
// them. Every agent relays the first failure it hears of, so each learns the
// original cause before it could see a stream close. fail returns once the
// other agents were written to (each write bounded by a deadline), so no
// later Bye or close can overtake the Fail.
func (j *Job) fail(f *Failure) {
	j.mu.Lock()
	if j.err != nil || j.removed {
		j.mu.Unlock()
		return
	}
	j.err = f
	j.emit(Event{Kind: EventFailed, Rank: f.Rank, Replica: -1, Code: f.Code, Err: f})
	links, ins := j.streamsLocked()
	j.mu.Unlock()
	log.Infof("job %s: %v", j.spec.ID, f)
	frame := f.frame()
	for _, p := range j.procs {
		p.q.close(frame)
	}
	if f.gone { // the others carry on without this agent: its streams just end
		for _, l := range links {
			l.shutdown(nil)
		}
		for _, in := range ins {
			in.shutdown(nil)
		}
		j.cancel()
		return
	}
	var wg sync.WaitGroup
	for _, l := range links {
		wg.Add(1)
		go func() { defer wg.Done(); l.control(frame) }()
	}
	for _, in := range ins {
		wg.Add(1)
		go func() { defer wg.Done(); in.control(frame) }()
	}
	wg.Wait()
	j.cancel()
}

// farewell is the last frame of a stream of the job: the failure if it
// failed, else Bye.
func (j *Job) farewell() proto.Frame {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil && j.err.gone {
		return nil
	}
	if j.err != nil {
		return j.err.frame()
	}
	return proto.NewFrame(proto.TypeBye, 0)
}

// streamsLocked snapshots the job's links and inbound streams; j.mu is held.
func (j *Job) streamsLocked() ([]*link, []*inbound) {
	links := make([]*link, 0, len(j.links))
	for _, l := range j.links {
		links = append(links, l)
	}
	ins := make([]*inbound, 0, len(j.inbound))
	for in := range j.inbound {
		ins = append(ins, in)
	}
	return links, ins
}

// unfinishedLocked reports whether a local copy has not finalized; j.mu is held.
func (j *Job) unfinishedLocked() bool {
	for _, p := range j.procs {
		if p.state != procFinalized {
			return true
		}
	}
	return false
}

// shutdown ends the job here: a job removed while local copies still run
// fails first (so the other agents' ranks do not wait for them), then
// connections and streams close and the job's goroutines end.
func (j *Job) shutdown() {
	j.mu.Lock()
	if j.removed {
		j.mu.Unlock()
		return
	}
	running := j.unfinishedLocked() && j.err == nil
	replicated := j.spec.Replicas > 1
	j.mu.Unlock()
	if running && replicated {
		// The agent removes a job once its processes here have ended, so
		// a copy that did not finalize is a lost copy, whether or not its
		// connection's end was read yet: the others take over, and the job
		// fails only if that leaves a rank without a copy.
		for _, pr := range j.procs {
			j.procGone(pr, errors.New("its process ended"))
		}
		running = false
	}
	// The others hear of lost copies before this agent's farewell, which
	// would let them stop waiting for this agent's copies.
	j.announcing.Wait()
	if running {
		j.fail(&Failure{Cause: proto.CauseFailed, Rank: -1,
			Reason: "job ended at agent " + j.self.String() + " while ranks were running"})
	}
	bye := j.farewell()
	j.mu.Lock()
	j.removed = true
	j.shm.close()
	links, ins := j.streamsLocked()
	var attached []*proc
	for _, p := range j.procs {
		if p.conn != nil {
			attached = append(attached, p)
		}
	}
	j.mu.Unlock()
	j.cancel()
	for _, p := range j.procs {
		p.q.close(nil)
		p.log.close()
	}
	// Each writer writes its copy's last frame (the failure) and closes
	// the socket, which ends the copy's reader; closing it here first
	// could cut the failure off, and the rank would see only an EOF.
	for _, p := range attached {
		_ = p.conn.SetWriteDeadline(time.Now().Add(time.Second))
	}
	for _, p := range attached {
		<-p.wdone
		_ = p.conn.Close()
	}
	for _, l := range links {
		l.shutdown(bye)
	}
	for _, in := range ins {
		in.shutdown(bye)
	}
	j.wg.Wait()
	j.mu.Lock()
	close(j.events)
	j.mu.Unlock()
}
