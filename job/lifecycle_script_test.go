package job_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// TestLifecycleScripts runs the stories in testdata/lifecycle: a job's life
// on its submitter told as inputs (offers, replies, reports, ticks of a
// virtual clock) and the effects the machine answers with, one per line.
// Run with -rewrite to write the effects a changed machine gives.
func TestLifecycleScripts(t *testing.T) {
	datadriven.Walk(t, storyDir(), func(t *testing.T, path string) {
		s := newStory()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return s.run(t, d)
		})
	})
}

// t0 is when every story begins.
var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// story is the world around one machine: its clock, its hosts, and the
// effects it asked for that wait for an answer.
type story struct {
	cfg     lifecycle.Config
	env     lifecycle.Env
	m       *lifecycle.Machine
	now     time.Time
	known   []job.PeerRTT
	seq     map[string]uint64    // the last report numbered on each lease
	heard   map[string]time.Time // when each lease's host was last heard from
	silent  map[peer.ID]bool
	tokens  map[peer.ID]uint64 // offers that arrived and are being measured
	offered map[peer.ID]int    // offers made by each host
	next    uint64
	pending []lifecycle.Effect // async effects not answered yet
	taken   map[string]uint64  // journal: the last report taken, by lease
	done    map[string]bool
	ready   map[string]bool
	names   map[string]bool // the hosts the story named
	// autoFlood answers every flood at once: the stories that are not
	// about the flood leave it to the harness.
	autoFlood bool
}

func newStory() *story {
	cfg := lifecycle.DefaultConfig()
	cfg.Schedule = flood.Schedule{First: time.Second, Factor: 2, MaxRadius: 4, Extra: 1}
	return &story{cfg: cfg, now: t0, env: lifecycle.Env{Self: "submitter", FloodLimit: 4},
		seq: map[string]uint64{}, heard: map[string]time.Time{}, silent: map[peer.ID]bool{}, tokens: map[peer.ID]uint64{}, offered: map[peer.ID]int{},
		taken: map[string]uint64{}, done: map[string]bool{}, ready: map[string]bool{}, names: map[string]bool{}}
}

func (s *story) run(t *testing.T, d *datadriven.TestData) string {
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 && strings.HasPrefix(a.Key, "h") {
			s.names[a.Key] = true
		}
	}
	out := s.script(t, d)
	// Peer IDs print as the stories name them.
	for n := range s.names {
		p := peer.ID(n)
		out = strings.NewReplacer(job.ShortPeer(p), n, p.ShortString(), n, p.String(), n).Replace(out)
	}
	if os.Getenv("STORY_TRACE") != "" {
		t.Logf("%s\n%s", d.Pos+" "+d.Cmd, out)
	}
	return out
}

func (s *story) script(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	step := func(e lifecycle.Event) { s.step(&out, e) }
	switch d.Cmd {
	case "config":
		s.configure(t, d)
		return ""
	case "known":
		s.setKnown(d)
		return ""
	case "submit":
		s.m = lifecycle.New(s.cfg, s.env, lifecycle.Start{Record: s.newRecord(t, d)})
		step(lifecycle.Begin{})
	case "resume":
		s.resume(d, step)
	case "restart-agent":
		s.restartAgent(step)
	case "offer", "arrive":
		s.offer(t, d, step)
	case "decline":
		step(lifecycle.Decline{From: host(d), Msg: proto.DeclineMsg{Job: s.m.Record().ID, Code: proto.DeclineCode(arg(d, 1)),
			Detail: val(d, "detail", "")}})
	case "ok", "fail", "lost":
		s.answer(t, d, step)
	case "report":
		s.report(t, d, step)
	case "ended":
		h := host(d)
		step(lifecycle.StreamEnded{From: h, Lease: s.leaseOf(h), Why: val(d, "why", "stream reset")})
	case "silent":
		s.silent[host(d)] = true
		return ""
	case "tick":
		s.tick(t, d, step)
	case "cancel":
		step(lifecycle.Cancel{Why: val(d, "why", "the user cancels")})
	case "stop":
		s.stop(t, d, step)
	case "shutdown":
		step(lifecycle.Shutdown{})
	case "giveway":
		h := host(d)
		s.next++
		step(lifecycle.GiveWay{Token: s.next, Host: h, Lease: val(d, "lease", s.leaseOf(h)), For: job.ID(val(d, "for", "job9")),
			N: num(t, d, "n", 1), Min: num(t, d, "min", 0)})
	case "state":
		return s.state()
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	return out.String()
}

// step feeds one event to the machine at the story's time and prints
// the effects, keeping those that wait for an answer.
func (s *story) step(out *strings.Builder, e lifecycle.Event) {
	in := lifecycle.Input{Now: s.now, Event: e}
	if s.env.KnowsPeers {
		in.Known = s.known
	}
	if _, tick := e.(lifecycle.Tick); tick {
		in.Heard = map[string]time.Time{}
		for l, at := range s.heard {
			in.Heard[l] = at
		}
	}
	var flooded []lifecycle.Event
	for _, eff := range s.m.Step(in) {
		if f, ok := eff.(lifecycle.Flood); ok && s.autoFlood {
			flooded = append(flooded, lifecycle.Flooded{Radius: f.Radius})
		} else {
			s.keep(eff)
		}
		if line := s.describe(eff); line != "" {
			out.WriteString(line + "\n")
		}
	}
	for _, e := range flooded {
		s.step(out, e)
	}
}

// keep notes what the executor would: effects that wait for an answer,
// the journal of taken reports, the leases watched.
func (s *story) keep(eff lifecycle.Effect) {
	switch e := eff.(type) {
	case lifecycle.Flood, lifecycle.Lease, lifecycle.SettleCheckpoints:
		s.pending = append(s.pending, eff)
	case lifecycle.Take:
		if e.Report.Seq != 0 {
			s.taken[e.Lease] = e.Report.Seq
		}
		s.done[e.Lease] = s.done[e.Lease] || e.Report.Kind == proto.RepDone
		s.ready[e.Lease] = s.ready[e.Lease] || e.Report.Kind == proto.RepReady
	case lifecycle.Watch:
		s.heard = map[string]time.Time{}
		for _, l := range e.Leases {
			s.heard[l] = s.now
		}
	}
}

// Hosts are named h1, h2, ...; their lease keys are L-h1, L-h2, ...
func host(d *datadriven.TestData) peer.ID { return peer.ID(arg(d, 0)) }

func lease(h peer.ID) string { return "L-" + string(h) }

// arg is the i-th argument without a value.
func arg(d *datadriven.TestData, i int) string {
	n := 0
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 {
			if n == i {
				return a.Key
			}
			n++
		}
	}
	return ""
}

// val is the value of key=value, or def.
func val(d *datadriven.TestData, key, def string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key && len(a.Vals) > 0 {
			return strings.Join(a.Vals, ", ")
		}
	}
	return def
}

func num(t *testing.T, d *datadriven.TestData, key string, def int) int {
	v := val(d, key, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return n
}

func dur(t *testing.T, d *datadriven.TestData, key string, def time.Duration) time.Duration {
	v := val(d, key, "")
	if v == "" {
		return def
	}
	x, err := time.ParseDuration(v)
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return x
}

func (s *story) configure(t *testing.T, d *datadriven.TestData) {
	c := &s.cfg
	c.Deadline = dur(t, d, "deadline", c.Deadline)
	c.LostAfter = dur(t, d, "lost-after", c.LostAfter)
	c.StartTimeout = dur(t, d, "start-timeout", c.StartTimeout)
	c.InitTimeout = dur(t, d, "init-timeout", c.InitTimeout)
	c.OfferGrace = dur(t, d, "grace", c.OfferGrace)
	c.Spares = num(t, d, "spares", c.Spares)
	c.Schedule.Extra = num(t, d, "extra", c.Schedule.Extra)
	c.Retry.Backoff = dur(t, d, "backoff", c.Retry.Backoff)
	s.env.DirectLimit = num(t, d, "direct", s.env.DirectLimit)
	s.autoFlood = val(d, "floods", "") == "auto"
	if err := c.Validate(); err != nil {
		d.Fatalf(t, "%v", err)
	}
}

func (s *story) setKnown(d *datadriven.TestData) {
	s.env.KnowsPeers, s.known = true, nil
	for _, a := range d.CmdArgs {
		p := job.PeerRTT{ID: peer.ID(a.Key)}
		if len(a.Vals) > 0 {
			if a.Vals[0] == "dead" {
				p.Dead = true
			} else {
				p.RTT, _ = time.ParseDuration(a.Vals[0])
			}
		}
		s.known = append(s.known, p)
	}
	if s.m != nil {
		panic("known must come before submit")
	}
}

func (s *story) newRecord(t *testing.T, d *datadriven.TestData) job.Record {
	lo, hi, err := job.ParseProcs(val(d, "n", "1"))
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	desc := job.NewDescription("prog", nil, hi)
	desc.MinNodes = lo
	desc.ResizeEvery = dur(t, d, "resize-every", 0)
	desc.SetDefaults()
	desc.Replicas = num(t, d, "r", 1)
	desc.Retries = num(t, d, "retries", desc.Retries)
	desc.Deadline = dur(t, d, "deadline", desc.Deadline)
	desc.Timeout = dur(t, d, "timeout", desc.Timeout)
	desc.PMI = d.HasArg("pmi")
	if st := val(d, "strategy", ""); st != "" {
		desc.Strategy = job.Strategy(st)
	}
	if err := desc.Validate(); err != nil {
		d.Fatalf(t, "%v", err)
	}
	rec := job.NewRecord("job1", job.Key(strings.Repeat("k", 43)), desc, s.now)
	rec.DryRun = d.HasArg("dry-run")
	rec.Program = &proto.FileRef{Name: "prog", Hash: strings.Repeat("a", 64), Size: 10}
	return rec
}

// resume starts a new machine for the stopped job, as `zorilla resume`
// (or a preemption's resume) does.
func (s *story) resume(d *datadriven.TestData, step func(lifecycle.Event)) {
	st := lifecycle.Start{Record: s.m.Record()}
	if d.HasArg("elsewhere") && len(st.Record.Runs) > 0 {
		st.Avoid = st.Record.Runs[len(st.Record.Runs)-1].Hosts
	}
	if y := val(d, "yield", ""); y != "" {
		st.YieldTo, st.MinDeadline = []job.ID{job.ID(y)}, time.Hour
	}
	s.pending = nil
	s.m = lifecycle.New(s.cfg, s.env, st)
	step(lifecycle.Begin{})
}

// restartAgent starts a new machine from the record as the agent left it,
// with the journal of what it took, as an agent that restarts does.
func (s *story) restartAgent(step func(lifecycle.Event)) {
	s.pending = nil
	s.m = lifecycle.New(s.cfg, s.env, lifecycle.Start{Record: s.m.Record(),
		Journal: lifecycle.Journal{Seq: s.taken, Done: s.done, Ready: s.ready}})
	step(lifecycle.Begin{})
}

func (s *story) offer(t *testing.T, d *datadriven.TestData, step func(lifecycle.Event)) {
	h := host(d)
	token, arrived := s.tokens[h]
	if !arrived {
		s.next++
		token = s.next
		step(lifecycle.Arrived{Token: token, From: h})
	}
	if d.Cmd == "arrive" {
		s.tokens[h] = token
		return
	}
	delete(s.tokens, h)
	slots := num(t, d, "slots", 1)
	key := lease(h)
	if s.offered[h]++; s.offered[h] > 1 {
		key = fmt.Sprintf("%s.%d", key, s.offered[h]) // a later offer of the host: a lease of its own
	}
	msg := proto.OfferMsg{Job: s.m.Record().ID, Lease: key, Slots: slots, Cores: slots,
		Expires: s.now.Add(dur(t, d, "expires", 3*time.Minute)), Site: val(d, "site", "")}
	step(lifecycle.Offer{Token: token, From: h, Msg: msg, RTT: dur(t, d, "rtt", time.Millisecond)})
}

// answer answers pending effects: ok (every pending one, or those of a
// host and op), fail (refused, with why=) or lost (no reply).
func (s *story) answer(t *testing.T, d *datadriven.TestData, step func(lifecycle.Event)) {
	h, op := peer.ID(arg(d, 0)), arg(d, 1)
	var answered []lifecycle.Effect
	rest := s.pending[:0:0]
	for _, e := range s.pending {
		if matches(e, h, op) && (d.Cmd == "ok" || len(answered) == 0) {
			answered = append(answered, e)
		} else {
			rest = append(rest, e)
		}
	}
	if len(answered) == 0 {
		var lines []string
		for _, e := range s.pending {
			lines = append(lines, s.describe(e))
		}
		d.Fatalf(t, "nothing pending for %s %s; pending: %q", string(h), op, lines)
	}
	s.pending = rest
	for _, e := range answered {
		step(s.reply(d, e))
	}
}

func matches(e lifecycle.Effect, h peer.ID, op string) bool {
	switch e := e.(type) {
	case lifecycle.Flood:
		return h == "" || h == "flood"
	case lifecycle.SettleCheckpoints:
		return h == "" || h == "settle"
	case lifecycle.Lease:
		return h == "" || e.Host == h && (op == "" || string(e.Req.Op) == op)
	}
	return false
}

func (s *story) reply(d *datadriven.TestData, e lifecycle.Effect) lifecycle.Event {
	switch e := e.(type) {
	case lifecycle.Flood:
		return lifecycle.Flooded{Radius: e.Radius}
	case lifecycle.SettleCheckpoints:
		return lifecycle.CheckpointFiles{Settled: true}
	case lifecycle.Lease:
		r := lifecycle.LeaseReply{Host: e.Host, Op: e.Req.Op, Lease: e.Req.Lease}
		switch d.Cmd {
		case "ok":
			r.Reply = proto.LeaseReply{OK: true}
			if e.Req.Op == proto.OpRetry {
				r.Reply.Lease = e.Req.Lease + "'"
			}
		case "fail":
			r.Reply = proto.LeaseReply{Error: val(d, "why", "refused")}
		default:
			r.Err = fmt.Errorf("no reply")
		}
		return r
	}
	panic("unreachable")
}

func (s *story) report(t *testing.T, d *datadriven.TestData, step func(lifecycle.Event)) {
	h := host(d)
	l := s.leaseOf(h)
	r := proto.Report{Kind: proto.ReportKind(arg(d, 1)), Rank: num(t, d, "rank", 0), Replica: num(t, d, "replica", 0),
		Code: num(t, d, "status", num(t, d, "code", 0)), Signal: val(d, "signal", ""), TimedOut: d.HasArg("timed-out"),
		Reason: val(d, "reason", ""), Lost: val(d, "lost", ""), BadProgram: d.HasArg("bad-program"),
		Peer: peer.ID(val(d, "peer", "")), Stream: val(d, "stream", "stdout"), Data: []byte(val(d, "line", "")),
		Name: val(d, "name", ""), EOF: d.HasArg("eof"), Frozen: dur(t, d, "frozen", 0)}
	if r.Kind == proto.RepCheckpoint {
		r.Ckpt = &proto.CheckpointPart{Num: uint64(num(t, d, "num", 1)), Size: 4, Sum: "sum", Quiet: d.HasArg("quiet")}
	}
	s.seq[l]++
	r.Seq = s.seq[l]
	s.heard[l] = s.now
	step(lifecycle.Report{From: h, Lease: l, Report: r})
	if r.Kind == proto.RepCheckpoint && r.EOF {
		// The writer finishes the file at once.
		f := job.CheckpointFile{Rank: r.Rank, Size: 4, Hash: fmt.Sprintf("%064d", r.Ckpt.Num*100+uint64(r.Rank)),
			Copies: []peer.ID{h, "submitter"}, Quiet: r.Ckpt.Quiet}
		step(lifecycle.CheckpointFiles{Files: []lifecycle.KeptFile{{Num: r.Ckpt.Num, File: f, At: s.now}}})
	}
}

// leaseOf is the lease h runs the current attempt under (a retried start
// gives hosts new keys).
func (s *story) leaseOf(h peer.ID) string {
	if p := s.m.Record().Plan; p != nil {
		for _, hp := range p.Hosts {
			if hp.Offer.Peer == h {
				return hp.Offer.Lease
			}
		}
	}
	return lease(h)
}

// tick moves the clock: by a duration, through every timer due on the
// way (as the executor's timer would), or, without one, to the next.
func (s *story) tick(t *testing.T, d *datadriven.TestData, step func(lifecycle.Event)) {
	by := arg(d, 0)
	if by == "" {
		at, ok := s.m.Deadline()
		if !ok {
			d.Fatalf(t, "no timer armed")
		}
		s.advance(at)
		step(lifecycle.Tick{})
		return
	}
	x, err := time.ParseDuration(by)
	if err != nil {
		d.Fatalf(t, "tick %s: %v", by, err)
	}
	end := s.now.Add(x)
	for i := 0; i < 10000; i++ {
		at, ok := s.m.Deadline()
		if !ok || at.After(end) {
			break
		}
		s.advance(at)
		step(lifecycle.Tick{})
	}
	s.advance(end)
}

// advance sets the clock; the hosts not silent are heard from meanwhile.
func (s *story) advance(to time.Time) {
	if to.After(s.now) {
		s.now = to
	}
	for l := range s.heard {
		if !s.silent[peer.ID(strings.TrimPrefix(strings.TrimSuffix(l, "'"), "L-"))] {
			s.heard[l] = s.now
		}
	}
}

func (s *story) stop(t *testing.T, d *datadriven.TestData, step func(lifecycle.Event)) {
	s.next++
	st := lifecycle.Stop{Token: s.next, Timeout: dur(t, d, "timeout", 2*time.Minute)}
	if by := val(d, "by", ""); by != "" {
		st.By = &lifecycle.PreemptBy{Host: peer.ID(by), Lease: val(d, "lease", s.leaseOf(peer.ID(by))), Why: "preempted by job2"}
	}
	step(st)
}

// state prints what the record says, and where the machine is.
func (s *story) state() string {
	r := s.m.Record()
	var b strings.Builder
	fmt.Fprintf(&b, "state %s attempts=%d matches=%d starts=%d restarts=%d exit=%d phase=%s\n",
		r.State, r.Attempts, r.Matches, r.Starts, r.Restarts, r.Exit, s.m.Phase())
	if r.Reason != "" {
		fmt.Fprintf(&b, "reason: %s\n", r.Reason)
	}
	if r.Plan != nil {
		fmt.Fprintf(&b, "plan: %s\n", layout(*r.Plan))
	}
	if len(r.Unavailable) > 0 {
		var names []string
		for _, p := range r.Unavailable {
			names = append(names, string(p))
		}
		fmt.Fprintf(&b, "unavailable: %s\n", strings.Join(names, " "))
	}
	if c, ok := r.LastComplete(); ok {
		fmt.Fprintf(&b, "checkpoint: %d complete\n", c.Num)
	}
	if r.State == job.Running {
		fmt.Fprintf(&b, "running: %s, sliced %v\n", r.Phase(), r.Time.Sliced)
	}
	if r.Desc.Malleable() {
		var rs []string
		for _, z := range r.Resizes {
			rs = append(rs, fmt.Sprintf("%d->%d (%s)", z.From, z.To, z.Why))
		}
		fmt.Fprintf(&b, "size %d of %s; resizes: %s\n", r.WorldSize(), r.Desc.FormatProcs(), strings.Join(rs, ", "))
	}
	if at, ok := s.m.Deadline(); ok {
		fmt.Fprintf(&b, "next timer: +%v\n", at.Sub(s.now))
	}
	var hist []string
	for _, e := range r.History {
		hist = append(hist, string(e.State))
	}
	fmt.Fprintf(&b, "history: %s\n", strings.Join(hist, " "))
	return b.String()
}

// layout writes a plan as "h1:0.0,1.0 h2:2.0".
func layout(p job.Plan) string {
	var hosts []string
	for _, h := range p.Hosts {
		var procs []string
		for _, pr := range h.Procs {
			procs = append(procs, fmt.Sprintf("%d.%d", pr.Rank, pr.Replica))
		}
		hosts = append(hosts, fmt.Sprintf("%s:%s", string(h.Offer.Peer), strings.Join(procs, ",")))
	}
	return strings.Join(hosts, " ")
}

// describe puts an effect in one line; effects of no interest to a story
// (saving the record, the journal of output) print nothing.
func (s *story) describe(eff lifecycle.Effect) string {
	switch e := eff.(type) {
	case lifecycle.Flood:
		line := fmt.Sprintf("flood radius=%d key=%s", e.Radius, e.Key)
		if need, err := proto.DecodeNeed(e.Body); err == nil && e.Radius == 1 {
			line += fmt.Sprintf(" deadline=%v", need.Deadline) // what the hosts size their leases by
			if need.YieldTo != "" {
				line += " yield-to=" + string(need.YieldTo)
			}
			if need.Grow {
				line += fmt.Sprintf(" grow=%d", need.N)
			} else if need.Min > 0 {
				line += fmt.Sprintf(" n=%d:%d", need.Min, need.N)
			}
		}
		return line
	case lifecycle.Direct:
		var names []string
		for _, p := range e.Peers {
			names = append(names, string(p))
		}
		return "direct " + strings.Join(names, " ")
	case lifecycle.Lease:
		return s.describeLease(e)
	case lifecycle.AnswerOffer:
		if e.Reply.Keep {
			return "offer kept"
		}
		return "offer refused: " + e.Reply.Reason
	case lifecycle.AnswerStop:
		if e.Err == nil {
			return "stop answered: stopped"
		}
		return "stop answered: " + e.Err.Error()
	case lifecycle.AnswerGiveWay:
		if e.Err == nil {
			return "give way: yes"
		}
		return "give way: no: " + e.Err.Error()
	case lifecycle.Notify:
		return describeUpdate(e.Update)
	case lifecycle.Take:
		if e.Output != nil && e.Output.File != "stdout" && e.Output.File != "stderr" {
			return fmt.Sprintf("write %s (%d bytes)", e.Output.File, len(e.Output.Data))
		}
		return ""
	case lifecycle.Watch:
		return fmt.Sprintf("watch %s", strings.Join(e.Leases, " "))
	case lifecycle.Refuse:
		return fmt.Sprintf("refuse %s: %s", e.Lease, e.Why)
	case lifecycle.WriteChunk:
		return fmt.Sprintf("write checkpoint %d of rank %d", e.Part.Num, e.Rank)
	case lifecycle.SettleCheckpoints:
		return "settle checkpoints"
	case lifecycle.End:
		if e.Detached {
			return "end (detached)"
		}
		return "end"
	case lifecycle.Save, lifecycle.GrantFiles, lifecycle.AddAddrs, lifecycle.RemoveCheckpointDir:
		return ""
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", eff), "lifecycle.")
}

func (s *story) describeLease(e lifecycle.Lease) string {
	line := fmt.Sprintf("lease %s %s %s", e.Req.Op, string(e.Host), e.Req.Lease)
	if c := e.Req.Commit; c != nil {
		var procs []string
		for _, p := range c.Procs {
			procs = append(procs, fmt.Sprintf("%d.%d", p.Rank, p.Replica))
		}
		line += " procs=" + strings.Join(procs, ",")
		if len(c.Restore) > 0 {
			line += fmt.Sprintf(" restore=%d", c.Restore[0].Num)
		}
		if c.RestoreSize > 0 {
			line += fmt.Sprintf(" from-size=%d", c.RestoreSize)
		}
	}
	if e.Req.Reason != "" {
		line += ": " + e.Req.Reason
	}
	return line
}

func describeUpdate(u job.Update) string {
	switch u.Kind {
	case "state":
		if u.Note != "" {
			return fmt.Sprintf("state %s (%s)", u.State, u.Note)
		}
		return "state " + string(u.State)
	case "progress":
		f := u.Flood
		return fmt.Sprintf("progress radius=%d offers=%d slots=%d/%d", f.Radius, f.Offers, f.Slots, f.Need)
	case "end":
		if u.Record.Reason == "" {
			return fmt.Sprintf("end %s exit=%d", u.State, u.Record.Exit)
		}
		return fmt.Sprintf("end %s exit=%d: %s", u.State, u.Record.Exit, u.Record.Reason)
	}
	if u.Rank < 0 {
		return "notice: " + u.Line
	}
	return fmt.Sprintf("rank %d says %q", u.Rank, u.Line)
}

var _ = os.Stdout
var _ = slices.Sort[[]string]
var _ = sort.Strings

func storyDir() string {
	if d := os.Getenv("STORY_DIR"); d != "" {
		return d
	}
	return filepath.Join("testdata", "lifecycle")
}
