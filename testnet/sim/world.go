package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/worker"
)

// epoch0 is virtual time zero on every agent's clock (plus its skew).
var epoch0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// World is one run: the agents, the jobs, the network and the queue of
// what happens next.
type World struct {
	cfg    Config
	rng    *rand.Rand
	topo   *topology
	agents []*agent
	byID   map[peer.ID]int32
	jobs   []*simJob
	q      queue
	now    time.Duration
	cut    []bool // by group: cut off from the rest
	upVer  uint64 // counts crashes and restarts

	lcfg  lifecycle.Config
	trace hash.Hash
	out   io.Writer // the trace, line by line, when asked
	line  []byte

	stats   stats
	failure *Violation
	events  uint64

	backlogged []*part              // parts holding reports they could not send
	ledger     map[string]time.Time // leases offered and not yet committed or given back, with their expiry
	fheap      []hop                // the flood walk's heap, reused
}

// agent is one simulated agent: its worker's lease table and what the
// faults made of it.
type agent struct {
	idx      int32
	id       peer.ID
	up       bool
	epoch    uint32
	policy   worker.Policy
	leases   *worker.Leases
	nbrs     []int32
	known    []job.PeerRTT
	knownIdx []int32
	knownNow []job.PeerRTT // known as last given, with the dead marked
	knownVer uint64
	skew     time.Duration
	slow     float64
	liar     bool
	parts    map[string]*part // by lease: the job parts staged or running here
	keys     uint64
	downAt   time.Duration
	jobs     []int32 // jobs submitted here
}

// New builds a run from cfg: topology, agents, overlay and the schedule of
// jobs and faults, all drawn from cfg.Seed.
func New(cfg Config) (*World, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &World{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5a11a)), byID: map[peer.ID]int32{}, trace: sha256.New(),
		ledger: map[string]time.Time{}}
	w.lcfg = cfg.Lifecycle
	if cfg.Topology == "grid5000" {
		w.topo = gridTopology(cfg.Agents)
	} else {
		w.topo = internetTopology(cfg.Agents, cfg.Regions, cfg.NATShare, w.rng)
	}
	w.cut = make([]bool, len(w.topo.groups))
	for i := range cfg.Agents {
		if err := w.addAgent(i); err != nil {
			return nil, err
		}
	}
	w.buildOverlay()
	w.planJobs()
	w.planFaults()
	return w, nil
}

// Trace sends the run's trace, one line per event, to out.
func (w *World) Trace(out io.Writer) { w.out = out }

func (w *World) addAgent(i int) error {
	a := &agent{idx: int32(i), id: peer.ID(fmt.Sprintf("agent%06d", i)), up: true, slow: 1, parts: map[string]*part{}}
	f := w.cfg.Faults
	if f.Skew > 0 {
		a.skew = time.Duration(w.rng.Int64N(int64(2*f.Skew))) - f.Skew
	}
	if f.Slow > 0 && w.rng.Float64() < f.Slow {
		a.slow = f.SlowFactor
	}
	a.liar = f.Liars > 0 && w.rng.Float64() < f.Liars
	cores := w.topo.cores[i]
	// J = 1, P = the cores: the Grid'5000 reproduction's agents.
	a.policy = worker.Policy{MaxJobs: 1, MaxProcs: cores, Cores: cores, Memory: 1 << 34, OS: "linux", Arch: "amd64", Self: a.id}
	w.agents = append(w.agents, a)
	w.byID[a.id] = int32(i)
	return w.newLeases(a)
}

// newLeases gives a the empty lease table of an agent that just started,
// on its own clock, with keys drawn from the run's seed.
func (w *World) newLeases(a *agent) error {
	ls, err := worker.NewLeases(a.policy, worker.LeaseConfig{
		DefaultTTL: worker.DefaultLeaseConfig().DefaultTTL, MaxTTL: worker.DefaultLeaseConfig().MaxTTL,
		Now: func() time.Time { return w.clock(a) },
		NewKey: func() string {
			a.keys++
			return fmt.Sprintf("%s-e%d-l%d", string(a.id), a.epoch, a.keys)
		}})
	if err != nil {
		return fmt.Errorf("sim: agent %d: %w", a.idx, err)
	}
	a.leases = ls
	return nil
}

// clock is a's clock now: virtual time plus its skew.
func (w *World) clock(a *agent) time.Time { return epoch0.Add(w.now + a.skew) }

// at is a's clock reading for virtual time t.
func at(a *agent, t time.Duration) time.Time { return epoch0.Add(t + a.skew) }

// Run runs the world until its duration, or until an invariant fails.
func (w *World) Run() Result {
	for w.q.len() > 0 && w.failure == nil {
		e := w.q.pop()
		if e.at > w.cfg.Duration {
			break
		}
		w.now = e.at
		w.events++
		w.handle(e)
		w.checkQueues()
	}
	w.now = w.cfg.Duration
	if w.failure == nil {
		w.checkEnd()
	}
	return w.result()
}

// handle dispatches one event.
func (w *World) handle(e event) {
	if e.agent >= 0 {
		a := w.agents[e.agent]
		if e.kind != evRestart && e.kind != evSubmit && (!a.up || a.epoch != e.epoch) {
			w.tracef(e, "dropped")
			w.dropped(e)
			return
		}
	}
	switch e.kind {
	case evSubmit:
		w.submit(e)
	case evTick:
		w.onTick(e)
	case evAdvert:
		w.onAdvert(e)
	case evOffer:
		w.onOffer(e)
	case evMeasured:
		w.onMeasured(e)
	case evOfferReply:
		w.onOfferReply(e)
	case evDecline:
		w.onDecline(e)
	case evLeaseReq:
		w.onLeaseReq(e)
	case evLeaseReply:
		w.onLeaseReply(e)
	case evReport:
		w.onReport(e)
	case evStaged, evReady, evExit, evGrace, evFence, evThaw:
		w.onPart(e)
	case evCrash, evSubCrash:
		w.crash(e)
	case evRestart:
		w.restart(e)
	case evCut, evHeal:
		w.onCut(e)
	case evForge:
		w.forge(e)
	case evAck:
		w.onAck(e)
	}
}

// dropped: an event for an agent that crashed meanwhile is lost. A lease
// request lost so is a call that fails: its submitter learns it when the
// call times out.
func (w *World) dropped(e event) {
	if c, ok := e.data.(leaseCall); ok && e.kind == evLeaseReq && c.tries >= 0 {
		j := w.jobs[e.job]
		c.err = errNoReply
		w.push(callTimeout, evLeaseReply, j.sub, j.idx, c)
	}
}

// tracef adds one line to the trace: the time, the event and what came
// of it.
func (w *World) tracef(e event, format string, args ...any) {
	w.line = strconv.AppendInt(w.line[:0], int64(w.now), 10)
	w.line = append(append(append(w.line, ' '), e.kind.String()...), " a"...)
	w.line = append(strconv.AppendInt(w.line, int64(e.agent), 10), " j"...)
	w.line = append(strconv.AppendInt(w.line, int64(e.job), 10), ' ')
	w.line = fmt.Appendf(w.line, format, args...)
	w.line = append(w.line, '\n')
	w.trace.Write(w.line)
	if w.out != nil {
		_, _ = w.out.Write(w.line)
	}
}

// Digest is the SHA-256 of the trace so far, in hex.
func (w *World) Digest() string { return hex.EncodeToString(w.trace.Sum(nil)) }

// push schedules an event for agent a (its current incarnation).
func (w *World) push(d time.Duration, k kind, a int32, j int32, data any) {
	var ep uint32
	if a >= 0 {
		ep = w.agents[a].epoch
	}
	w.q.push(event{at: w.now + max(d, 0), kind: k, agent: a, job: j, epoch: ep, data: data})
}

// jitter is d scaled by a uniform factor in [1-f, 1+f].
func (w *World) jitter(d time.Duration, f float64) time.Duration {
	return time.Duration(float64(d) * (1 - f + 2*f*w.rng.Float64()))
}
