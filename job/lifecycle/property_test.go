package lifecycle_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"pgregory.net/rapid"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// TestLifecycleInvariants drives machines with random worlds (offers,
// declines, replies that come, fail or never come, reports, silences,
// cancels, stops, the clock) and checks on every step what must always
// hold: no lease is committed twice, none once it expired or was given
// back; every offer and every stop is answered once; a job ends exactly
// once, and after its end only answers go out; every lease the job kept
// is in the end committed, given back, or left to expire; a tick leaves
// no timer due; no attempt is committed while a host counted lost, whose
// worker freezes the processes of an earlier attempt only once its fence
// closed, may still run them.
func TestLifecycleInvariants(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := newWorld(rt)
		for i := 0; i < 300 && !w.m.Ended(); i++ {
			w.act(rt)
		}
		w.finish(rt)
		if c := os.Getenv("WORLD_COVER"); c != "" { // shows that random worlds reach a path
			for _, z := range w.m.Record().Resizes {
				if strings.Contains(z.Why, c) {
					rt.Fatalf("reached %q: %+v", c, w.m.Record().Resizes)
				}
			}
		}
	})
}

var hosts = []peer.ID{"h1", "h2", "h3", "h4", "h5", "h6"}

// world is the machine's surroundings and what it asked of them.
type world struct {
	m         *lifecycle.Machine
	now       time.Time
	next      uint64
	pending   []lifecycle.Effect // async effects not answered
	offers    map[uint64]bool    // offer tokens not answered yet
	stops     map[uint64]bool
	kept      map[string]time.Time      // leases the job kept, with their expiry
	made      map[uint64]proto.OfferMsg // offers made, by token
	closed    map[string]bool           // leases committed, given back or killed
	commits   map[string]bool
	cancelled map[string]bool    // leases given back
	plan      map[peer.ID]string // hosts committed in the current attempt, by lease
	seq       map[string]uint64
	stage     map[string]int    // where each lease's host is in its reports
	ckpt      map[string]uint64 // the last checkpoint each lease's host sent
	silent    map[peer.ID]bool
	heard     map[string]time.Time
	ends      int

	lo, hi  int                  // the job's sizes (equal for a rigid job)
	written []lifecycle.KeptFile // checkpoint files the writer finished, not yet told
	live    map[string]int       // leases whose processes may run, by attempt
	fenced  map[string]fenceEnd  // leases counted lost, whose worker may run them until their fence closes
	fence   time.Duration        // the config's Fence
	ways    map[uint64]bool      // give-way asks not answered yet
}

func newWorld(rt *rapid.T) *world {
	d := job.NewDescription("prog", nil, rapid.IntRange(1, 4).Draw(rt, "n"))
	d.Replicas = rapid.IntRange(1, 2).Draw(rt, "r")
	if d.Replicas == 1 && d.Nodes > 1 && rapid.Bool().Draw(rt, "malleable") {
		d.MinNodes = rapid.IntRange(1, d.Nodes-1).Draw(rt, "min")
		d.ResizeEvery = time.Duration(rapid.IntRange(1, 40).Draw(rt, "resize-every")) * time.Second
	}
	d.Strategy = rapid.SampledFrom([]job.Strategy{job.Spread, job.Concentrate}).Draw(rt, "strategy")
	d.Retries = rapid.IntRange(0, 2).Draw(rt, "retries")
	d.Deadline = time.Duration(rapid.IntRange(5, 120).Draw(rt, "deadline")) * time.Second
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	rec := job.NewRecord("job1", job.Key(strings.Repeat("k", 43)), d, t0)
	rec.Program = &proto.FileRef{Name: "prog", Hash: strings.Repeat("a", 64), Size: 1}
	cfg := lifecycle.DefaultConfig()
	cfg.Schedule = flood.Schedule{First: time.Second, Factor: 2, MaxRadius: 4, Extra: 1}
	cfg.LostAfter, cfg.StartTimeout, cfg.InitTimeout = 8*time.Second, 20*time.Second, 20*time.Second
	cfg.Fence = time.Duration(rapid.IntRange(1, 12).Draw(rt, "fence")) * time.Second
	env := lifecycle.Env{Self: "submitter", FloodLimit: 4, KnowsPeers: rapid.Bool().Draw(rt, "knows"), DirectLimit: 4}
	w := &world{m: lifecycle.New(cfg, env, lifecycle.Start{Record: rec}), now: t0, offers: map[uint64]bool{}, stops: map[uint64]bool{},
		kept: map[string]time.Time{}, made: map[uint64]proto.OfferMsg{}, closed: map[string]bool{}, commits: map[string]bool{}, cancelled: map[string]bool{}, plan: map[peer.ID]string{},
		seq: map[string]uint64{}, stage: map[string]int{}, ckpt: map[string]uint64{}, silent: map[peer.ID]bool{}, heard: map[string]time.Time{},
		live: map[string]int{}, ways: map[uint64]bool{}, fenced: map[string]fenceEnd{}, fence: cfg.Fence}
	w.lo, w.hi = d.SizeRange()
	w.step(rt, lifecycle.Begin{})
	return w
}

// act does one random thing to the machine.
func (w *world) act(rt *rapid.T) {
	switch rapid.IntRange(0, 11).Draw(rt, "action") {
	case 0, 1:
		w.offer(rt)
	case 2:
		w.step(rt, lifecycle.Decline{From: rapid.SampledFrom(hosts).Draw(rt, "host"),
			Msg: proto.DeclineMsg{Job: "job1", Code: rapid.SampledFrom([]proto.DeclineCode{proto.DeclineBusy, proto.DeclinePolicy, proto.DeclineYield}).Draw(rt, "code")}})
	case 3, 4:
		w.answer(rt)
	case 5, 6:
		w.report(rt)
	case 7:
		w.tick(rt, time.Duration(rapid.IntRange(0, 15000).Draw(rt, "ms"))*time.Millisecond)
	case 8:
		if rapid.IntRange(0, 99).Draw(rt, "rare") == 57 { // rapid favours small values: a cancel must not be one
			w.step(rt, lifecycle.Cancel{Why: "random"})
		} else {
			w.next++
			w.stops[w.next] = true
			w.step(rt, lifecycle.Stop{Token: w.next, Timeout: time.Minute})
		}
	case 9:
		h := rapid.SampledFrom(hosts).Draw(rt, "silent")
		w.silent[h] = !w.silent[h]
	case 10:
		if len(w.written) > 0 {
			w.step(rt, lifecycle.CheckpointFiles{Files: w.written})
			w.written = nil
		}
	case 11:
		w.giveWay(rt)
	}
}

// giveWay has a host of the run ask the job to give way to another.
func (w *world) giveWay(rt *rapid.T) {
	h := rapid.SampledFrom(hosts).Draw(rt, "asker")
	l, ok := w.plan[h]
	if !ok {
		return
	}
	w.next++
	w.ways[w.next] = true
	n := rapid.IntRange(1, 3).Draw(rt, "waiting-n")
	w.step(rt, lifecycle.GiveWay{Token: w.next, Host: h, Lease: l, For: "job9", N: n, Min: rapid.IntRange(0, n).Draw(rt, "waiting-min")})
}

func (w *world) offer(rt *rapid.T) {
	h := rapid.SampledFrom(hosts).Draw(rt, "host")
	slots := rapid.IntRange(1, 3).Draw(rt, "slots")
	w.next++
	token := w.next
	w.offers[token] = true
	l := fmt.Sprintf("L%d-%s", token, h)
	exp := w.now.Add(time.Duration(rapid.IntRange(10, 300).Draw(rt, "ttl")) * time.Second)
	msg := proto.OfferMsg{Job: "job1", Lease: l, Slots: slots, Cores: slots, Expires: exp}
	w.made[token] = msg
	w.step(rt, lifecycle.Arrived{Token: token, From: h})
	w.step(rt, lifecycle.Offer{Token: token, From: h, RTT: time.Duration(rapid.IntRange(1, 20).Draw(rt, "rtt")) * time.Millisecond,
		Msg: msg})
}

// answer answers one pending effect: it comes, fails, or never will.
func (w *world) answer(rt *rapid.T) {
	if len(w.pending) == 0 {
		return
	}
	i := rapid.IntRange(0, len(w.pending)-1).Draw(rt, "pending")
	e := w.pending[i]
	w.pending = append(w.pending[:i:i], w.pending[i+1:]...)
	how := rapid.IntRange(0, 9).Draw(rt, "how") // mostly ok
	switch e := e.(type) {
	case lifecycle.Flood:
		w.step(rt, lifecycle.Flooded{Radius: e.Radius})
	case lifecycle.SettleCheckpoints:
		w.step(rt, lifecycle.CheckpointFiles{Settled: true})
	case lifecycle.Lease:
		r := lifecycle.LeaseReply{Host: e.Host, Op: e.Req.Op, Lease: e.Req.Lease}
		switch {
		case how == 0:
			r.Err = fmt.Errorf("no reply")
		case how == 1:
			r.Reply.Error = "refused"
		default:
			r.Reply.OK = true
			if e.Req.Op == proto.OpRetry {
				r.Reply.Lease = e.Req.Lease + "'"
				w.kept[r.Reply.Lease] = w.now.Add(time.Minute)
			}
		}
		w.step(rt, r)
	}
}

// report has a host of the current attempt send its next report, in the
// order a worker sends them (started, ready, output and checkpoints, its
// ranks' exits, done), or now and then a fault: its stream ends, its
// agent leaves, a rank fails.
func (w *world) report(rt *rapid.T) {
	if len(w.plan) == 0 {
		return
	}
	h := rapid.SampledFrom(hosts).Draw(rt, "reporter")
	l, ok := w.plan[h]
	if !ok {
		return
	}
	w.heard[l] = w.now
	switch rapid.IntRange(0, 29).Draw(rt, "fault") { // rapid favours small values: faults are the large ones
	case 29:
		w.step(rt, lifecycle.StreamEnded{From: h, Lease: l, Why: "reset"})
		return
	case 28:
		delete(w.live, l) // a host that leaves ends its processes
		w.send(rt, h, l, proto.Report{Kind: proto.RepLeaving, Reason: "stopping"})
		return
	case 27:
		w.send(rt, h, l, proto.Report{Kind: proto.RepExit, Code: 1})
		return
	}
	stages := []proto.ReportKind{proto.RepStarted, proto.RepReady, proto.RepOutput, proto.RepCheckpoint, proto.RepExit, proto.RepDone}
	st := w.stage[l]
	if st >= len(stages) {
		return
	}
	kind := stages[st]
	if kind == proto.RepOutput || kind == proto.RepCheckpoint {
		if rapid.Bool().Draw(rt, "more") {
			w.stage[l]++
		}
	} else {
		w.stage[l]++
	}
	if kind == proto.RepCheckpoint {
		w.checkpoint(rt, h, l)
		return
	}
	if kind == proto.RepDone {
		delete(w.live, l)
	}
	w.send(rt, h, l, proto.Report{Kind: kind, Data: []byte("x"), Stream: "stdout", EOF: true})
}

// checkpoint has host h send its ranks' files of its next checkpoint,
// quiet or not; the writer finishes them (w.written) for a later step.
func (w *world) checkpoint(rt *rapid.T, h peer.ID, l string) {
	plan := w.m.Record().Plan
	if plan == nil {
		return
	}
	w.ckpt[l]++
	quiet := rapid.Bool().Draw(rt, "quiet")
	for _, pr := range plan.Procs(h) {
		part := &proto.CheckpointPart{Num: w.ckpt[l], Size: 1, Sum: "s", Quiet: quiet}
		w.send(rt, h, l, proto.Report{Kind: proto.RepCheckpoint, Rank: pr.Rank, Ckpt: part, Data: []byte("x"), EOF: true})
		w.written = append(w.written, lifecycle.KeptFile{Num: part.Num, At: w.now,
			File: job.CheckpointFile{Rank: pr.Rank, Size: 1, Hash: fmt.Sprintf("%064d", part.Num*100+uint64(pr.Rank)), Quiet: quiet}})
	}
}

func (w *world) send(rt *rapid.T, h peer.ID, l string, r proto.Report) {
	w.seq[l]++
	r.Seq = w.seq[l]
	w.step(rt, lifecycle.Report{From: h, Lease: l, Report: r})
}

func (w *world) tick(rt *rapid.T, by time.Duration) {
	end := w.now.Add(by)
	for i := 0; i < 1000 && !w.m.Ended(); i++ {
		at, ok := w.m.Deadline()
		if !ok || at.After(end) {
			break
		}
		w.advance(at)
		w.step(rt, lifecycle.Tick{})
	}
	w.advance(end)
}

func (w *world) advance(to time.Time) {
	if to.After(w.now) {
		w.now = to
	}
	for h, l := range w.plan {
		if !w.silent[h] {
			w.heard[l] = w.now
		}
	}
}

// step feeds one event and checks every effect against the invariants.
func (w *world) step(rt *rapid.T, e lifecycle.Event) {
	if r, ok := e.(lifecycle.LeaseReply); ok && r.Err == nil && r.Reply.OK && (r.Op == proto.OpKill || r.Op == proto.OpRetry) {
		delete(w.fenced, r.Lease) // its worker confirmed: the processes end
	}
	ended := w.m.Ended()
	heard := map[string]time.Time{}
	for l, at := range w.heard {
		heard[l] = at
	}
	known := []job.PeerRTT{}
	for _, h := range hosts {
		known = append(known, job.PeerRTT{ID: h, RTT: time.Millisecond})
	}
	effects := w.m.Step(lifecycle.Input{Now: w.now, Event: e, Known: known, Heard: heard})
	if os.Getenv("WORLD_TRACE") != "" {
		rt.Logf("%v %T %+v", w.now.Format("15:04:05.000"), e, e)
		for _, eff := range effects {
			rt.Logf("    %T %+v", eff, eff)
		}
	}
	for _, eff := range effects {
		if ended {
			w.afterEnd(rt, eff)
		}
		w.check(rt, eff)
	}
	if _, tick := e.(lifecycle.Tick); tick {
		// A tick acts on every timer due: one left due would have its
		// executor tick again and again at the same instant.
		if at, ok := w.m.Deadline(); ok && !at.After(w.now) {
			rt.Fatalf("a timer still due at %v after a tick (phase %s)", at, w.m.Phase())
		}
	}
}

func (w *world) check(rt *rapid.T, eff lifecycle.Effect) {
	switch e := eff.(type) {
	case lifecycle.AnswerOffer:
		if !w.offers[e.Token] {
			rt.Fatalf("offer %d answered twice, or never made", e.Token)
		}
		delete(w.offers, e.Token)
		if msg := w.made[e.Token]; e.Reply.Keep {
			w.kept[msg.Lease] = msg.Expires
		}
	case lifecycle.AnswerStop:
		if !w.stops[e.Token] {
			rt.Fatalf("stop %d answered twice, or never asked", e.Token)
		}
		delete(w.stops, e.Token)
	case lifecycle.AnswerGiveWay:
		if !w.ways[e.Token] {
			rt.Fatalf("give-way %d answered twice, or never asked", e.Token)
		}
		delete(w.ways, e.Token)
	case lifecycle.Refuse:
		// Counted lost: its worker ends the processes when it hears of it;
		// cut off, it freezes them once the submitter answered nothing
		// it sent, at the latest when last heard, for Fence.
		if attempt, ok := w.live[e.Lease]; ok {
			heard, ok := w.heard[e.Lease]
			if !ok {
				heard = w.now
			}
			w.fenced[e.Lease] = fenceEnd{attempt: attempt, at: heard.Add(w.fence)}
		}
		delete(w.live, e.Lease)
	case lifecycle.Lease:
		w.lease(rt, e)
		w.pending = append(w.pending, eff)
	case lifecycle.Flood, lifecycle.SettleCheckpoints:
		w.pending = append(w.pending, eff)
	case lifecycle.Watch:
		w.plan = map[peer.ID]string{}
	case lifecycle.End:
		w.ends++
		if w.ends > 1 {
			rt.Fatalf("the job ended twice")
		}
	}
}

func (w *world) lease(rt *rapid.T, e lifecycle.Lease) {
	l := e.Req.Lease
	switch e.Req.Op {
	case proto.OpCommit:
		if w.commits[l] {
			rt.Fatalf("lease %s committed twice", l)
		}
		if exp, ok := w.kept[l]; ok && !w.now.Before(exp) {
			rt.Fatalf("lease %s committed at %v, after it expired at %v", l, w.now, exp)
		}
		if w.cancelled[l] {
			rt.Fatalf("lease %s committed after it was given back", l)
		}
		c := e.Req.Commit
		if c.N < w.lo || c.N > w.hi {
			rt.Fatalf("committed at %d processes, outside %d..%d", c.N, w.lo, w.hi)
		}
		for old, attempt := range w.live {
			if attempt < c.Attempt {
				rt.Fatalf("attempt %d committed while lease %s of attempt %d may still run", c.Attempt, old, attempt)
			}
		}
		for old, f := range w.fenced {
			if f.attempt < c.Attempt && w.now.Before(f.at) {
				rt.Fatalf("attempt %d committed at %v while lease %s of attempt %d, counted lost, may run until its fence closes at %v",
					c.Attempt, w.now.Format("15:04:05.000"), old, f.attempt, f.at.Format("15:04:05.000"))
			}
		}
		w.live[l] = c.Attempt
		w.commits[l] = true
		w.plan[e.Host] = l
		w.closed[l] = true
	case proto.OpCancel:
		w.cancelled[l] = true
		w.closed[l] = true
	case proto.OpKill, proto.OpRetry:
		w.closed[l] = true
		delete(w.live, l)
	}
}

// fenceEnd is when a lease counted lost has surely frozen its processes.
type fenceEnd struct {
	attempt int
	at      time.Time
}

// afterEnd: once the job ended, only answers and give-backs go out.
func (w *world) afterEnd(rt *rapid.T, eff lifecycle.Effect) {
	switch e := eff.(type) {
	case lifecycle.AnswerOffer:
		if e.Reply.Keep {
			rt.Fatalf("an offer kept after the end")
		}
	case lifecycle.AnswerStop:
		if e.Err == nil {
			rt.Fatalf("a stop granted after the end")
		}
	case lifecycle.AnswerGiveWay:
		if e.Err == nil {
			rt.Fatalf("a give-way granted after the end")
		}
	default:
		rt.Fatalf("effect %T after the end", eff)
	}
}

// finish drives the job to its end (every reply ok, every host done,
// time passing) and checks that every lease it kept was committed, given
// back, or left to expire.
func (w *world) finish(rt *rapid.T) {
	for i := 0; i < 200 && !w.m.Ended(); i++ {
		for len(w.pending) > 0 {
			e := w.pending[0]
			w.pending = w.pending[1:]
			switch e := e.(type) {
			case lifecycle.Flood:
				w.step(rt, lifecycle.Flooded{Radius: e.Radius})
			case lifecycle.SettleCheckpoints:
				w.step(rt, lifecycle.CheckpointFiles{Settled: true})
			case lifecycle.Lease:
				w.step(rt, lifecycle.LeaseReply{Host: e.Host, Op: e.Req.Op, Lease: e.Req.Lease, Reply: proto.LeaseReply{OK: true}})
			}
		}
		if i == 100 {
			w.step(rt, lifecycle.Cancel{Why: "the test ends"})
		}
		w.tick(rt, 30*time.Second)
	}
	if !w.m.Ended() {
		rt.Fatalf("the job never ended (phase %s)", w.m.Phase())
	}
	if w.ends != 1 {
		rt.Fatalf("the job ended %d times", w.ends)
	}
	// A lease the job dropped as about to expire is left to expire on its
	// worker: it must be within the expiry margin of its end by now.
	margin := lifecycle.DefaultConfig().ExpiryMargin
	for l, exp := range w.kept {
		if !w.closed[l] && w.now.Before(exp.Add(-margin)) {
			rt.Fatalf("lease %s kept, and neither committed, given back nor expiring", l)
		}
	}
	if len(w.offers) > 0 || len(w.stops) > 0 || len(w.ways) > 0 {
		rt.Fatalf("%d offers, %d stops and %d give-way asks never answered", len(w.offers), len(w.stops), len(w.ways))
	}
}
