package sim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// simJob is one job: its description, its submitter's machine, and what
// the simulation keeps to drive it and to check it.
type simJob struct {
	idx     int32
	id      job.ID
	sub     int32
	desc    job.Description
	m       *lifecycle.Machine
	rec     job.Record
	runFor  time.Duration // a rank's run time before jitter
	failing bool          // its last rank exits 1
	badExit bool          // a rank exited non-zero

	tokens  uint64
	offers  map[uint64]offerIn
	leases  map[string]int32         // lease -> host, every lease the job was offered
	heard   map[string]time.Duration // lease -> when its last report came
	refused map[string]bool          // leases counted lost
	current map[string]bool          // the leases of the current attempt (Watch)
	floods  map[string]*floodInfo    // by flood key
	inbox   []lifecycle.Event

	tickAt  time.Duration
	tickGen uint64

	submitted time.Duration
	started   time.Duration // when it first ran; 0: never
	ended     time.Duration
	ends      int
	gone      bool // its submitter crashed: the machine is lost
	detached  bool // gone while running: re-attached when its agent restarts
	journal   lifecycle.Journal
	adverts   int // advert messages of its floods
	copies    map[int]int
	lo, hi    int
	crashAt   float64 // its submitter crashes this far into the run; 0: never
	dryRun    bool    // list-match only: placed, then every offer cancelled
}

type offerIn struct {
	from int32
	msg  proto.OfferMsg
}

// planJobs draws the jobs and schedules their submissions.
func (w *World) planJobs() {
	mix := w.cfg.Mix
	var nancy []int32
	for i, s := range w.topo.siteOf {
		if w.topo.grid && w.topo.sites[s].group == 0 {
			nancy = append(nancy, int32(i))
		}
	}
	for i := range w.cfg.Jobs {
		n := mix.Sizes[w.rng.IntN(len(mix.Sizes))]
		d := job.NewDescription("prog", nil, n)
		if w.rng.Float64() < mix.Replicated {
			d.Replicas = 2
		} else if n > 1 && w.rng.Float64() < mix.Malleable {
			d.MinNodes = max(1, n/2)
			d.ResizeEvery = 30 * time.Second
		}
		d.Strategy = job.Spread
		if w.rng.Float64() < mix.Concentrate {
			d.Strategy = job.Concentrate
		}
		sub := int32(w.rng.IntN(len(w.agents)))
		if len(nancy) > 0 { // the paper submits from nancy
			sub = nancy[w.rng.IntN(len(nancy))]
		}
		t := time.Duration(0)
		if w.cfg.Jobs > 1 {
			t = w.cfg.Submit * time.Duration(i) / time.Duration(w.cfg.Jobs-1)
		}
		j := w.newJob(d, sub, t)
		j.runFor, j.failing = w.jitter(mix.RunTime, 0.5), w.rng.Float64() < mix.Failing
		if w.cfg.Faults.SubmitterCrash > 0 && w.rng.Float64() < w.cfg.Faults.SubmitterCrash {
			j.crashAt = 0.1 + 0.6*w.rng.Float64()
		}
	}
}

// newJob adds a job of description d, submitted at sub at time t.
func (w *World) newJob(d job.Description, sub int32, t time.Duration) *simJob {
	i := len(w.jobs)
	j := &simJob{idx: int32(i), id: job.ID(fmt.Sprintf("job%05d", i)), sub: sub, desc: d, runFor: w.cfg.Mix.RunTime,
		offers: map[uint64]offerIn{}, leases: map[string]int32{}, heard: map[string]time.Duration{},
		refused: map[string]bool{}, floods: map[string]*floodInfo{}, copies: map[int]int{}, tickAt: -1}
	j.lo, j.hi = d.SizeRange()
	w.jobs = append(w.jobs, j)
	w.agents[sub].jobs = append(w.agents[sub].jobs, j.idx)
	w.q.push(event{at: t, kind: evSubmit, agent: sub, job: j.idx})
	return j
}

// submit starts a job's machine on its submitter, if that agent is up.
func (w *World) submit(e event) {
	j, a := w.jobs[e.job], w.agents[e.agent]
	j.submitted = w.now
	if !a.up {
		w.tracef(e, "submitter down")
		w.endJob(j, "submitter down at submission")
		return
	}
	rec := job.NewRecord(j.id, job.Key(strings.Repeat("k", 43)), j.desc, w.clock(a))
	rec.Program = &proto.FileRef{Name: "prog", Hash: strings.Repeat("a", 64), Size: 1 << 20}
	rec.DryRun = j.dryRun
	j.m = lifecycle.New(w.lcfg, w.env(a), lifecycle.Start{Record: rec})
	j.rec = rec
	w.tracef(e, "n=%d r=%d %s", j.desc.Nodes, j.desc.Replicas, j.desc.Strategy)
	w.step(j, lifecycle.Begin{})
}

// env is what a machine knows of agent a: its overlay view, and the
// flooder's limits.
func (w *World) env(a *agent) lifecycle.Env {
	return lifecycle.Env{Self: a.id, KnowsPeers: true, DirectLimit: min(w.lcfg.Direct, flood.MaxDirect),
		FloodLimit: w.lcfg.Schedule.Limit(flood.DefaultConfig().MaxTTL)}
}

// step feeds the machine one event, carries out its effects, feeds the
// outcomes that come at once, and arms its next tick.
func (w *World) step(j *simJob, ev lifecycle.Event) {
	j.inbox = append(j.inbox, ev)
	for len(j.inbox) > 0 && !j.gone {
		ev := j.inbox[0]
		j.inbox = j.inbox[1:]
		a := w.agents[j.sub]
		in := lifecycle.Input{Now: w.clock(a), Event: ev}
		if j.m.TakesOffers() {
			in.Known = w.knownBy(a)
		}
		if _, tick := ev.(lifecycle.Tick); tick && j.m.Watching() {
			in.Heard = w.heardBy(j)
		}
		state := j.rec.State
		effects := j.m.Step(in)
		w.checkStep(j, state, effects)
		if j.started == 0 && j.m.Record().State == job.Running {
			j.started = w.now
			w.crashSubmitter(j)
		}
		for _, eff := range effects {
			w.do(j, eff)
		}
	}
	w.armTick(j)
}

// knownBy is a's overlay view: its peers, those down marked dead (the
// overlay stops counting on a peer a probe did not reach).

func (w *World) knownBy(a *agent) []job.PeerRTT {
	if a.knownVer == w.upVer && a.knownNow != nil {
		return a.knownNow
	}
	out := make([]job.PeerRTT, len(a.known))
	for i, k := range a.known {
		p := w.agents[a.knownIdx[i]]
		k.Dead = !p.up
		out[i] = k
	}
	a.knownNow, a.knownVer = out, w.upVer
	return out
}

// heardBy is when the submitter of j last heard from each of its hosts:
// now for a host that runs its part and can reach it (its heartbeats
// come), else its last report.
func (w *World) heardBy(j *simJob) map[string]time.Time {
	sub := w.agents[j.sub]
	out := make(map[string]time.Time, len(j.current))
	for l := range j.current {
		h := j.leases[l]
		t, ok := j.heard[l]
		if _, runs := w.agents[h].parts[l]; runs && w.reachable(int(h), int(j.sub)) {
			t, ok = w.now, true
		}
		if ok {
			out[l] = at(sub, t)
		}
	}
	return out
}

// armTick schedules the machine's next timer.
func (w *World) armTick(j *simJob) {
	if j.gone || j.m == nil || j.m.Ended() {
		return
	}
	d, ok := j.m.Deadline()
	if !ok {
		j.tickAt = -1
		return
	}
	t := max(d.Sub(at(w.agents[j.sub], 0)), w.now)
	if t == j.tickAt {
		return
	}
	j.tickAt = t
	j.tickGen++
	w.push(t-w.now, evTick, j.sub, j.idx, j.tickGen)
}

func (w *World) onTick(e event) {
	j := w.jobs[e.job]
	if j.gone || e.data.(uint64) != j.tickGen {
		return
	}
	j.tickAt = -1
	w.tracef(e, "phase=%s", j.m.Phase())
	w.step(j, lifecycle.Tick{})
}

// do carries out one effect of j's machine.
func (w *World) do(j *simJob, eff lifecycle.Effect) {
	switch e := eff.(type) {
	case lifecycle.Flood:
		w.flood(j, e.Key, e.Body, e.Radius)
		j.inbox = append(j.inbox, lifecycle.Flooded{Radius: e.Radius})
	case lifecycle.Direct:
		w.direct(j, e.Key, e.Body, e.Peers)
	case lifecycle.Lease:
		w.sendLease(j, e, 0)
	case lifecycle.AnswerOffer:
		o := j.offers[e.Token]
		delete(j.offers, e.Token)
		if e.Reply.Keep {
			j.leases[o.msg.Lease] = o.from
		}
		w.send(int(j.sub), int(o.from), evOfferReply, j.idx, offerReply{lease: o.msg.Lease, keep: e.Reply.Keep})
	case lifecycle.Save:
		j.rec = j.m.Record()
	case lifecycle.Take:
		w.journal(j, e)
	case lifecycle.Watch:
		j.current = map[string]bool{}
		for _, l := range e.Leases {
			j.heard[l] = w.now
			j.current[l] = true
		}
		for _, l := range sortedKeys(j.leases) {
			if !j.current[l] {
				w.refuseStream(j, l)
			}
		}
	case lifecycle.Refuse:
		j.refused[e.Lease] = true
		w.refuseStream(j, e.Lease)
	case lifecycle.SettleCheckpoints:
		j.inbox = append(j.inbox, lifecycle.CheckpointFiles{Settled: true})
	case lifecycle.AnswerStop:
	case lifecycle.AnswerGiveWay:
	case lifecycle.End:
		j.rec = j.m.Record()
		w.endJob(j, string(j.rec.State))
	}
}

// endJob counts a job's end.
func (w *World) endJob(j *simJob, how string) {
	j.ends++
	j.ended = w.now
	if j.ends > 1 {
		w.violate(j.sub, "job %s ended twice (%s)", j.id, how)
	}
}

// sortedKeys returns a map's string keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
