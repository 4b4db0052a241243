package job

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// hostRun is the session's view of one host during a start attempt.
type hostRun struct {
	plan    HostPlan
	started bool   // phase one done here: every local copy is running
	ready   bool   // phase two: every local copy is in mpi.Init
	done    bool   // the host reported its end, was killed, or was lost
	seq     uint64 // the last numbered report taken
	frozen  bool   // its processes are stopped in place (RepFrozen)
}

// watch follows the job from the commits to its end: phase one (every host
// started), phase two (every rank in Init, then the release), output and
// exits. It returns nil when every host is done and every copy exited 0.
// w is where the job stands: nothing yet for a new start, running and
// released for a job re-attached after this agent restarted.
func (ss *session) watch(w *watchState) error {
	start := time.NewTimer(ss.s.cfg.StartTimeout)
	defer start.Stop()
	if !w.released && len(ss.hostsWhere(func(h *hostRun) bool { return h.ready && !h.done })) > 0 {
		// Re-attached before the release, with copies in Init: the others
		// get the Init timeout again, from now, to reach it.
		w.initTimer = time.After(ss.s.cfg.InitTimeout)
	}
	beat := time.NewTicker(ss.s.cfg.LostAfter / 4)
	defer beat.Stop()
	quiet := newSilences()
	for {
		var err error
		select {
		case in := <-ss.events:
			err = ss.onReport(w, in)
		case <-start.C:
			if !w.running {
				slow := ss.hostsWhere(func(h *hostRun) bool { return !h.started })
				err = failure{kind: StartTimeout, hosts: slow,
					why: fmt.Sprintf("%d host(s) did not start in %v", len(slow), ss.s.cfg.StartTimeout)}
			}
		case <-w.initTimer:
			slow := ss.hostsWhere(func(h *hostRun) bool { return !h.ready })
			err = failure{kind: StartTimeout, hosts: slow,
				why: fmt.Sprintf("not every rank reached mpi.Init in %v", ss.s.cfg.InitTimeout)}
		case <-beat.C:
			err = ss.checkSilent(w, quiet)
		case <-ss.checkpointsReady():
			ss.takeKept(ss.ckw.take())
		case o := <-ss.offers:
			o.reply <- proto.OfferReply{Reason: "job already placed"} // the worker frees its slots at once
		case why := <-ss.cancel:
			err = errCancelled{why}
		case r := <-ss.stopReq:
			ss.beginStop(w, r)
		case <-w.stopTimer():
			ss.stopTimedOut(w)
		case <-ss.ctx.Done():
			err = errCancelled{"agent shutting down"}
			if w.running {
				// The hosts keep the job running for their grace period:
				// this agent re-attaches when it starts again.
				err = errDetached
			}
		}
		if err == nil {
			err = ss.stopIfCheckpointed(w)
		}
		if err != nil || w.finished {
			// What the run sent of its checkpoints is all there will be:
			// the files whose last chunk came are kept before the end is
			// judged (a restart takes the last complete checkpoint).
			ss.settleCheckpoints()
			ss.endStop(w, err)
			return err
		}
	}
}

// releaseIfReady lets the ranks go (phase two) once every host still in
// the job has every local copy in Init. A host lost meanwhile does not hold
// the others back: a replicated job goes on without it.
func (ss *session) releaseIfReady(w *watchState) {
	if w.released || !ss.all(func(h *hostRun) bool { return h.ready || h.done }) {
		return
	}
	w.released, w.initTimer = true, nil
	ss.releaseAll()
}

// watchState is what watch learns as reports come in.
type watchState struct {
	plan     Plan
	running  bool
	released bool
	// initTimer runs from the first copy in Init (or a re-attach before
	// the release) until the release: every rank must reach Init by then.
	initTimer <-chan time.Time
	lost      []peer.ID // hosts lost while running
	finished  bool
	stop      *stopping // a stop with a checkpoint under way
}

// onReport handles one report (or the end of a host's report stream). A
// numbered report is taken once: the worker sends again, after its stream
// reopened, what it does not know the session took. Each one taken is
// journaled before the worker hears it was.
func (ss *session) onReport(w *watchState, in reportIn) error {
	defer in.release()
	h := ss.hosts[in.from]
	if h == nil || h.plan.Offer.Lease != in.lease || h.done {
		return nil // a report from an earlier attempt, or after the host's end
	}
	if in.end != nil {
		if !ss.reports.current(in.lease, in.stream) {
			return nil // the worker opened a new stream meanwhile
		}
		return ss.onLost(w, in.from, in.end.Error())
	}
	e := in.ev
	if e.Seq != 0 {
		if e.Seq <= h.seq {
			return nil
		}
		h.seq = e.Seq
	}
	rec := journalRecord{Lease: in.lease, Seq: e.Seq, Done: e.Kind == proto.RepDone, Ready: e.Kind == proto.RepReady}
	err := ss.take(w, h, in, &rec)
	if e.Seq != 0 {
		if jerr := ss.journal.record(rec); jerr != nil {
			log.Warnw("report journal not written", "job", ss.id, "err", jerr)
		}
		ss.reports.took(in.lease, e.Seq)
	}
	return err
}

// take acts on one report; what it wrote to the job folder goes in rec.
func (ss *session) take(w *watchState, h *hostRun, in reportIn, rec *journalRecord) error {
	e := in.ev
	switch e.Kind {
	case proto.RepStarted:
		h.started = true
		if !w.running && ss.all(func(h *hostRun) bool { return h.started }) {
			w.running = true
			ss.setState(Running, "")
			ss.cancelLeases(w.plan.Cancel) // the spares are no longer needed
		}
	case proto.RepReady:
		h.ready = true
		if w.initTimer == nil && !w.released {
			w.initTimer = time.After(ss.s.cfg.InitTimeout)
		}
		ss.releaseIfReady(w)
	case proto.RepFailed:
		f := failure{kind: HostSilent, hosts: []peer.ID{in.from},
			why: fmt.Sprintf("host %s could not start its processes: %s", shortPeer(in.from), e.Reason)}
		if e.BadProgram {
			f.kind = BadProgram
			f.why = fmt.Sprintf("the program cannot start on host %s: %s", shortPeer(in.from), e.Reason)
			ss.rec.BadProgram = appendHost(ss.rec.BadProgram, in.from)
		}
		return f
	case proto.RepOutput, proto.RepFile:
		rec.File, rec.Size = ss.output(in.from, e)
	case proto.RepCheckpoint:
		ss.checkpointChunk(in.from, e)
	case proto.RepExit:
		return ss.exited(in.from, e)
	case proto.RepAbort:
		ss.exitCode = e.Code
		return failure{kind: RankFailed, rank: e.Rank, code: e.Code,
			why: fmt.Sprintf("rank %d called Abort(%d)", e.Rank, e.Code)}
	case proto.RepPeerLost:
		// With r = 1 the other host's loss ends this run: blame it now,
		// before the ranks' MPI failures arrive as exits that would read
		// as the program's own. Replicated jobs judge losses themselves.
		if lost := ss.hosts[e.Peer]; ss.sub.Desc.Replicas == 1 && lost != nil && !lost.done {
			return ss.onLost(w, e.Peer, "unreachable from "+shortPeer(in.from))
		}
	case proto.RepLeaving:
		return ss.onLost(w, in.from, leavingPrefix+e.Reason)
	case proto.RepDone:
		h.done = true
		w.finished = ss.all(func(h *hostRun) bool { return h.done })
	case proto.RepFrozen, proto.RepThawed:
		ss.onFreeze(h, e.Kind == proto.RepFrozen, e.Reason)
	case proto.RepSliced:
		ss.onSliced(e.Frozen)
	}
	return nil
}

// checkSilent counts the hosts lost that are silent for too long
// (liveness.go), as their streams' readers saw them.
func (ss *session) checkSilent(w *watchState, quiet *silences) error {
	leases := map[string]peer.ID{}
	for p, h := range ss.hosts {
		if !h.done {
			leases[h.plan.Offer.Lease] = p
		}
	}
	heard := ss.reports.heardOf(slices.Collect(maps.Keys(leases)))
	after := ss.s.cfg.LostAfter
	for _, l := range quiet.check(time.Now(), heard, after, after/2) {
		if err := ss.onLost(w, leases[l], "silent"); err != nil {
			return err
		}
	}
	return nil
}

// onLost handles a host that died or fell silent. Before the job runs it
// is a start failure; while it runs, Recover says whether the replicas
// carry on.
func (ss *session) onLost(w *watchState, p peer.ID, why string) error {
	ss.hosts[p].done = true
	ss.reports.refuse(ss.hosts[p].plan.Offer.Lease, "counted lost: "+hostLossWords(why))
	if !w.running {
		return failure{kind: HostSilent, hosts: []peer.ID{p},
			why: fmt.Sprintf("host %s lost during the start: %s", p.ShortString(), why)}
	}
	w.lost = append(w.lost, p)
	if ss.sub.Desc.Replicas > 1 {
		words := hostLossWords(why)
		if orphans := ss.loseCopies(p, ss.hosts[p].plan.Procs, words); len(orphans) > 0 {
			return failure{kind: HostLost, hosts: w.lost,
				why: fmt.Sprintf("rank %d has no copy left: its last copy was on %s (%s)", orphans[0], shortPeer(p), words)}
		}
	}
	rec := Recover(ss.rec, HostLost, w.lost, ss.s.cfg.Retry, 0, 0)
	if rec.Action == Continue {
		log.Infow("host lost, its ranks live on in their copies", "job", ss.id, "host", p)
		ss.fence(p, why)
		w.finished = ss.all(func(h *hostRun) bool { return h.done })
		ss.releaseIfReady(w) // the lost host may have been the last one not in Init
		return nil
	}
	return failure{kind: HostLost, hosts: w.lost,
		why: fmt.Sprintf("host %s lost while running (%s)", shortPeer(p), hostLossWords(why))}
}

// fence tells a host counted lost to end the job's processes there: if it
// was only cut off, it must not carry on, nor send output, in a job that
// goes on without it (its reports are ignored from now on). A dead host
// does not answer; the kill is not sent again.
func (ss *session) fence(p peer.ID, why string) {
	req := proto.LeaseRequest{Op: proto.OpKill, Job: ss.id, Lease: ss.hosts[p].plan.Offer.Lease, Reason: "counted lost: " + hostLossWords(why)}
	ss.s.wg.Add(1)
	go func() {
		defer ss.s.wg.Done()
		if _, err := ss.s.lease(ss.s.ctx, p, req); err != nil {
			log.Debugw("kill of a lost host not delivered", "job", ss.id, "host", p, "err", err)
		}
	}()
}

// exited records a copy's end; the first non-zero status fails the job.
// In a replicated job a copy killed by a signal is a lost copy: the job
// fails only when its rank has no copy left. A non-zero status stays the
// program's answer (every copy computes the same, so it would give it too).
func (ss *session) exited(from peer.ID, e proto.Report) error {
	if e.Code == 0 && e.Signal == "" && !e.TimedOut {
		return nil
	}
	if ss.sub.Desc.Replicas > 1 && e.Lost != "" {
		if len(ss.loseCopies(from, []proto.Proc{{Rank: e.Rank, Replica: e.Replica}}, e.Lost)) == 0 {
			return nil
		}
		return failure{kind: RankFailed, rank: e.Rank, code: max(e.Code, 1),
			why: fmt.Sprintf("rank %d has no copy left: the last %s", e.Rank, e.Lost)}
	}
	why := fmt.Sprintf("rank %d exited with status %d on host %s", e.Rank, e.Code, shortPeer(from))
	switch {
	case e.TimedOut:
		why = fmt.Sprintf("rank %d killed on host %s: wall-clock limit %v reached", e.Rank, shortPeer(from), ss.sub.Desc.Timeout)
	case e.Signal != "":
		why = fmt.Sprintf("rank %d killed by signal %s on host %s", e.Rank, e.Signal, shortPeer(from))
	}
	if ss.sub.Desc.Replicas > 1 && e.Signal != "" && !e.TimedOut {
		copyWhy := "its process was killed by signal " + e.Signal
		if len(ss.loseCopies(from, []proto.Proc{{Rank: e.Rank, Replica: e.Replica}}, copyWhy)) == 0 {
			return nil // another copy of the rank carries on
		}
		why = fmt.Sprintf("rank %d has no copy left: the last %s", e.Rank, strings.TrimPrefix(why, fmt.Sprintf("rank %d ", e.Rank)))
	}
	if ss.exitCode == 0 {
		ss.exitCode = max(e.Code, 1)
	}
	return failure{kind: RankFailed, rank: e.Rank, code: e.Code, why: why}
}

// leavingPrefix marks the loss of a host whose agent said it is stopping.
const leavingPrefix = "leaving: "

// hostLossWords says in words why a host counts as lost: its reports fell
// silent, or their stream broke (the stream's error, with libp2p's words,
// goes to the log, not to the user).
func hostLossWords(why string) string {
	if why == "silent" {
		return "agent silent"
	}
	if reason, ok := strings.CutPrefix(why, leavingPrefix); ok {
		return "agent stopping: " + reason
	}
	log.Debugw("host report stream ended", "why", why)
	return "agent unreachable"
}
