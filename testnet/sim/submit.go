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
	env := lifecycle.Env{Self: a.id, KnowsPeers: true, DirectLimit: min(w.lcfg.Direct, flood.MaxDirect),
		FloodLimit: w.lcfg.Schedule.Limit(flood.DefaultConfig().MaxTTL)}
	j.m = lifecycle.New(w.lcfg, env, lifecycle.Start{Record: rec})
	j.rec = rec
	w.tracef(e, "n=%d r=%d %s", j.desc.Nodes, j.desc.Replicas, j.desc.Strategy)
	w.step(j, lifecycle.Begin{})
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
				w.fence(j, l)
				w.refuseStream(j, l)
			}
		}
	case lifecycle.Refuse:
		j.refused[e.Lease] = true
		w.fence(j, e.Lease)
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

// journal records a report taken, as the submitter's report journal does
// on disk: what a re-attached machine starts from.
func (w *World) journal(j *simJob, t lifecycle.Take) {
	jr := &j.journal
	if jr.Seq == nil {
		jr.Seq, jr.Done, jr.Ready = map[string]uint64{}, map[string]bool{}, map[string]bool{}
	}
	if t.Report.Seq > jr.Seq[t.Lease] {
		jr.Seq[t.Lease] = t.Report.Seq
	}
	switch t.Report.Kind {
	case proto.RepDone:
		jr.Done[t.Lease] = true
	case proto.RepReady:
		jr.Ready[t.Lease] = true
	}
}

// reattach gives a job whose submitter restarted a new machine from its
// record and journal, which asks its hosts whether they still run it.
func (w *World) reattach(j *simJob) {
	a := w.agents[j.sub]
	env := lifecycle.Env{Self: a.id, KnowsPeers: true, DirectLimit: min(w.lcfg.Direct, flood.MaxDirect),
		FloodLimit: w.lcfg.Schedule.Limit(flood.DefaultConfig().MaxTTL)}
	j.m = lifecycle.New(w.lcfg, env, lifecycle.Start{Record: j.rec, Journal: j.journal})
	j.gone, j.detached, j.offers, j.inbox, j.tickAt = false, false, map[uint64]offerIn{}, nil, -1
	w.stats.reattached++
	w.step(j, lifecycle.Begin{})
}

// endJob counts a job's end.
func (w *World) endJob(j *simJob, how string) {
	j.ends++
	j.ended = w.now
	if j.ends > 1 {
		w.violate(j.sub, "job %s ended twice (%s)", j.id, how)
	}
}

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
	if j.gone || j.refused[r.lease] || j.current != nil && !j.current[r.lease] {
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

// sortedKeys returns a map's string keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
