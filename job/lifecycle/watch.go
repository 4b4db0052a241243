package lifecycle

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// watch follows the start's hosts once their commits are in: phase one
// (every host started its processes, then every rank in mpi.Init), phase
// two (the release), then output and exits, until every host is done or
// something ends the run.
// reattached says it is a run taken back after the agent restarted.
func (m *Machine) watch(reattached bool) {
	run := m.run
	m.phase = watching
	run.startBy = m.now.Add(m.cfg.StartTimeout)
	if reattached && !run.released && len(run.where(func(h *hostRun) bool { return h.ready && !h.done })) > 0 {
		// Re-attached before the release, with copies in Init: the others
		// get the Init timeout again, from now, to reach it.
		run.initBy = m.now.Add(m.cfg.InitTimeout)
	}
	run.beatAt = m.now.Add(m.cfg.LostAfter / 4)
	backlog := run.backlog
	run.backlog = nil
	for _, e := range backlog {
		if m.phase != watching {
			return
		}
		switch e := e.(type) {
		case Report:
			m.onReport(e)
		case StreamEnded:
			m.onStreamEnded(e)
		}
	}
}

// watchTick acts on the run's timers that are due.
func (m *Machine) watchTick() {
	run := m.run
	var f *job.Failure
	switch {
	case !run.running && due(m.now, run.startBy):
		slow := run.where(func(h *hostRun) bool { return !h.started })
		f = &job.Failure{Kind: job.StartTimeout, Hosts: slow,
			Why: fmt.Sprintf("%d host(s) did not start in %v", len(slow), m.cfg.StartTimeout)}
	case !run.released && due(m.now, run.initBy):
		slow := run.where(func(h *hostRun) bool { return !h.ready })
		f = &job.Failure{Kind: job.StartTimeout, Hosts: slow,
			Why: fmt.Sprintf("not every rank reached mpi.Init in %v", m.cfg.InitTimeout)}
	}
	if f != nil {
		m.runEnded(failed(*f))
		return
	}
	if run.stop != nil && due(m.now, run.stop.by) {
		m.stopTimedOut()
	}
	m.resizeTick()
	m.growTick()
	m.growIfDue()
	if due(m.now, run.beatAt) {
		run.beatAt = m.now.Add(m.cfg.LostAfter / 4)
		m.checkSilent()
	}
}

func due(now, at time.Time) bool { return !at.IsZero() && !now.Before(at) }

// afterWatchEvent ends the run when an event failed it, when every host
// is done, or when the checkpoint a stop waited for is complete.
func (m *Machine) afterWatchEvent(out *outcome) {
	if m.phase != watching {
		return
	}
	if out == nil {
		out = m.stopIfCheckpointed()
	}
	if out == nil {
		out = m.resizeIfCheckpointed()
	}
	switch {
	case out != nil:
		m.runEnded(*out)
	case m.run.finished:
		m.runEnded(done())
	}
}

// onReport takes one report of a current host. A numbered report is taken
// once: the worker sends again, after its stream reopened, what it does
// not know the job took.
func (m *Machine) onReport(r Report) {
	switch m.phase {
	case committing, reattaching: // the watch takes them, in order
		m.run.backlog = append(m.run.backlog, r)
		return
	case watching:
	default:
		return // a report between two runs, or after the end
	}
	h := m.run.hosts[r.From]
	if h == nil || h.plan.Offer.Lease != r.Lease || h.done {
		return // a report from an earlier attempt, or after the host's end
	}
	e := r.Report
	if e.Seq != 0 {
		if e.Seq <= h.seq {
			return
		}
		h.seq = e.Seq
	}
	take := Take{Lease: r.Lease, Report: proto.Report{Kind: e.Kind, Seq: e.Seq}}
	out := m.take(h, r.From, e, &take)
	if e.Seq != 0 || take.Output != nil {
		m.emit(take)
	}
	m.afterWatchEvent(out)
}

// onStreamEnded counts a host lost whose current report stream ended
// before its RepDone.
func (m *Machine) onStreamEnded(e StreamEnded) {
	switch m.phase {
	case committing, reattaching:
		m.run.backlog = append(m.run.backlog, e)
		return
	case watching:
	default:
		return
	}
	h := m.run.hosts[e.From]
	if h == nil || h.plan.Offer.Lease != e.Lease || h.done {
		return
	}
	m.afterWatchEvent(m.onLost(e.From, e.Why, m.now))
}

// take acts on one report; where its bytes go in the job folder goes in t.
func (m *Machine) take(h *hostRun, from peer.ID, e proto.Report, t *Take) *outcome {
	switch e.Kind {
	case proto.RepStarted:
		m.onStarted(h)
	case proto.RepReady:
		m.onReady(h)
	case proto.RepFailed:
		return m.onFailedStart(from, e)
	case proto.RepOutput, proto.RepFile:
		t.Output = m.output(from, e)
	case proto.RepCheckpoint:
		m.checkpointChunk(from, e)
	case proto.RepExit:
		return m.exited(from, e)
	case proto.RepAbort:
		m.exitCode = e.Code
		o := failed(job.Failure{Kind: job.RankFailed, Rank: e.Rank, Code: e.Code,
			Why: fmt.Sprintf("rank %d called Abort(%d)", e.Rank, e.Code)})
		return &o
	case proto.RepPeerLost:
		// With r = 1 the other host's loss ends this run: blame it now,
		// before the ranks' MPI failures arrive as exits that would read
		// as the program's own. Replicated jobs judge losses themselves.
		if lost := m.run.hosts[e.Peer]; m.rec.Desc.Replicas == 1 && lost != nil && !lost.done {
			return m.onLost(e.Peer, "unreachable from "+job.ShortPeer(from), m.now)
		}
	case proto.RepLeaving:
		// In touch, and ending its processes: no fence to wait for.
		return m.onLost(from, leavingPrefix+e.Reason, time.Time{})
	case proto.RepDone:
		h.done = true
		m.run.finished = m.run.all(func(h *hostRun) bool { return h.done })
	case proto.RepFrozen, proto.RepThawed:
		m.onFreeze(h, e.Kind == proto.RepFrozen, e.Reason)
	case proto.RepSliced:
		m.onSliced(e.Frozen)
	}
	return nil
}

func (m *Machine) onStarted(h *hostRun) {
	run := m.run
	h.started = true
	if !run.running && run.all(func(h *hostRun) bool { return h.started }) {
		run.running = true
		m.setState(job.Running, "")
		m.dropSpares() // no longer needed: a later start floods or uses kept hosts
	}
}

func (m *Machine) onReady(h *hostRun) {
	h.ready = true
	if m.run.initBy.IsZero() && !m.run.released {
		m.run.initBy = m.now.Add(m.cfg.InitTimeout)
	}
	m.releaseIfReady()
}

func (m *Machine) onFailedStart(from peer.ID, e proto.Report) *outcome {
	f := job.Failure{Kind: job.HostSilent, Hosts: []peer.ID{from},
		Why: fmt.Sprintf("host %s could not start its processes: %s", job.ShortPeer(from), e.Reason)}
	if e.BadProgram {
		f.Kind = job.BadProgram
		f.Why = fmt.Sprintf("the program cannot start on host %s: %s", job.ShortPeer(from), e.Reason)
		m.rec.BadProgram = job.AppendHost(m.rec.BadProgram, from)
	}
	o := failed(f)
	return &o
}

// releaseIfReady releases the ranks (phase two) once every host still in
// the job has every local copy in Init. A host lost meanwhile does not
// hold the others back: a replicated job goes on without it.
func (m *Machine) releaseIfReady() {
	run := m.run
	if run.released || !run.all(func(h *hostRun) bool { return h.ready || h.done }) {
		return
	}
	run.released, run.initBy, run.fallback = true, time.Time{}, nil
	at := m.now.UnixNano() // one instant for every host
	for _, p := range run.order {
		if h := run.hosts[p]; !h.done {
			m.emit(Lease{Host: p, Req: proto.LeaseRequest{Op: proto.OpRelease, Job: m.rec.ID, Lease: h.plan.Offer.Lease,
				ReleasedAt: at}, GiveBack: true})
		}
	}
	m.startGrowing()
}

// checkSilent counts the hosts lost that are silent for too long, as
// their streams' readers saw them (Input.Heard).
func (m *Machine) checkSilent() {
	run := m.run
	var leases []string
	byLease := map[string]peer.ID{}
	for _, p := range run.order {
		if h := run.hosts[p]; !h.done {
			leases = append(leases, h.plan.Offer.Lease)
			byLease[h.plan.Offer.Lease] = p
		}
	}
	after := m.cfg.LostAfter
	for _, l := range run.quiet.check(m.now, leases, m.in.Heard, after, after/2) {
		heard, ok := m.in.Heard[l]
		if !ok {
			heard = m.now
		}
		if out := m.onLost(byLease[l], "silent", heard); out != nil {
			m.runEnded(*out)
			return
		}
	}
	m.afterWatchEvent(nil)
}

// onLost handles a host that died or fell silent. Before the job runs it
// is a start failure; while it runs, Recover says whether the replicas
// carry on. heard is when the host was last heard from, from which its
// fence counts (zero: none, the host said it ends its processes).
func (m *Machine) onLost(p peer.ID, why string, heard time.Time) *outcome {
	run := m.run
	h := run.hosts[p]
	h.done = true
	m.fenceHost(p, heard)
	words := hostLossWords(why)
	m.emit(Refuse{Lease: h.plan.Offer.Lease, Why: "counted lost: " + words})
	if !run.running {
		o := failed(job.Failure{Kind: job.HostSilent, Hosts: []peer.ID{p},
			Why: fmt.Sprintf("host %s lost during the start: %s", job.ShortPeer(p), why)})
		return &o
	}
	run.lost = append(run.lost, p)
	if m.rec.Desc.Replicas > 1 {
		if orphans := m.loseCopies(p, h.plan.Procs, words); len(orphans) > 0 {
			o := failed(job.Failure{Kind: job.HostLost, Hosts: run.lost,
				Why: fmt.Sprintf("rank %d has no copy left: its last copy was on %s (%s)", orphans[0], job.ShortPeer(p), words)})
			return &o
		}
	}
	rec := job.Recover(m.rec, job.Failure{Kind: job.HostLost, Hosts: run.lost}, m.cfg.Retry)
	if rec.Action == job.Continue {
		log.Infow("host lost, its ranks live on in their copies", "job", m.rec.ID, "host", p)
		m.fence(p, h, words)
		run.finished = run.all(func(h *hostRun) bool { return h.done })
		m.releaseIfReady() // the lost host may have been the last one not in Init
		return nil
	}
	o := failed(job.Failure{Kind: job.HostLost, Hosts: run.lost,
		Why: fmt.Sprintf("host %s lost while running (%s)", job.ShortPeer(p), words)})
	return &o
}

// fence tells a host counted lost to end the job's processes there: if it
// was only cut off, it must not carry on, nor send output, in a job that
// goes on without it. A dead host does not answer; the kill is not sent
// again.
func (m *Machine) fence(p peer.ID, h *hostRun, words string) {
	m.lease(p, proto.LeaseRequest{Op: proto.OpKill, Lease: h.plan.Offer.Lease, Reason: "counted lost: " + words})
}

// exited records a copy's end; the first non-zero status fails the job.
// In a replicated job a copy killed by a signal is a lost copy: the job
// fails only when its rank has no copy left. A non-zero status stays the
// program's answer (every copy computes the same, so it would give it too).
func (m *Machine) exited(from peer.ID, e proto.Report) *outcome {
	if e.Code == 0 && e.Signal == "" && !e.TimedOut {
		return nil
	}
	r := m.rec.Desc.Replicas
	copyOf := []proto.Proc{{Rank: e.Rank, Replica: e.Replica}}
	if r > 1 && e.Lost != "" {
		if len(m.loseCopies(from, copyOf, e.Lost)) == 0 {
			return nil
		}
		o := failed(job.Failure{Kind: job.RankFailed, Rank: e.Rank, Code: max(e.Code, 1),
			Why: fmt.Sprintf("rank %d has no copy left: the last %s", e.Rank, e.Lost)})
		return &o
	}
	why := fmt.Sprintf("rank %d exited with status %d on host %s", e.Rank, e.Code, job.ShortPeer(from))
	switch {
	case e.TimedOut:
		why = fmt.Sprintf("rank %d killed on host %s: wall-clock limit %v reached", e.Rank, job.ShortPeer(from), m.rec.Desc.Timeout)
	case e.Signal != "":
		why = fmt.Sprintf("rank %d killed by signal %s on host %s", e.Rank, e.Signal, job.ShortPeer(from))
	}
	if r > 1 && e.Signal != "" && !e.TimedOut {
		if len(m.loseCopies(from, copyOf, "its process was killed by signal "+e.Signal)) == 0 {
			return nil // another copy of the rank carries on
		}
		why = fmt.Sprintf("rank %d has no copy left: the last %s", e.Rank, strings.TrimPrefix(why, fmt.Sprintf("rank %d ", e.Rank)))
	}
	if m.exitCode == 0 {
		m.exitCode = max(e.Code, 1)
	}
	o := failed(job.Failure{Kind: job.RankFailed, Rank: e.Rank, Code: e.Code, Why: why})
	return &o
}

// loseCopies records copies lost on host, tells the user once per copy,
// and returns the ranks left without a copy.
func (m *Machine) loseCopies(host peer.ID, procs []proto.Proc, why string) (orphans []int) {
	for _, p := range procs {
		if m.copyLost(p) {
			continue
		}
		l := job.LostCopy{Rank: p.Rank, Replica: p.Replica, Host: host, At: m.now, Why: why}
		if len(m.rec.Lost) < job.MaxLost {
			m.rec.Lost = append(m.rec.Lost, l)
		}
		m.lost = append(m.lost, l)
		left := job.CopiesLeft(m.plan, m.lost, p.Rank)
		m.notice(lostNotice(l, left))
		if left == 0 {
			orphans = append(orphans, p.Rank)
		}
	}
	m.emit(Save{})
	return orphans
}

// copyLost reports whether copy p was counted lost already.
func (m *Machine) copyLost(p proto.Proc) bool {
	for _, l := range m.lost {
		if l.Rank == p.Rank && l.Replica == p.Replica {
			return true
		}
	}
	return false
}

// lostNotice is the line a user following the job reads about a lost copy.
func lostNotice(l job.LostCopy, left int) string {
	copies := "copies"
	if left == 1 {
		copies = "copy"
	}
	return fmt.Sprintf("rank %d copy %d lost on %s (%s); %d %s left", l.Rank, l.Replica, job.ShortPeer(l.Host), l.Why, left, copies)
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

// output says where a report's line or file chunk goes in the job folder,
// and tells the watchers the lines.
func (m *Machine) output(from peer.ID, e proto.Report) *Output {
	if e.Kind == proto.RepOutput {
		line := string(bytes.TrimRight(e.Data, "\n"))
		stream := e.Stream
		if stream != "stdout" && stream != "stderr" {
			stream = "stderr"
		}
		m.emit(Notify{job.Update{Kind: "output", Rank: e.Rank, Replica: e.Replica, Stream: e.Stream, Line: line}})
		return &Output{File: stream, Data: fmt.Appendf(nil, "[%s] %s\n", job.ProcTag(e.Rank, e.Replica), line)}
	}
	name, err := m.outputFile(from, e)
	if err != nil {
		m.notice(fmt.Sprintf("output file %s of rank %d: %v", e.Name, e.Rank, err))
		return nil
	}
	if name == "" {
		return nil
	}
	return &Output{File: "output/" + name, Data: e.Data}
}

// outputFile names a rank's output file under output/ (OutputName): each
// rank's file comes back under a name of its own. Of a replicated rank,
// the first copy that sends a file is kept and the other copies' chunks of
// it are dropped ("": every copy computes the same).
func (m *Machine) outputFile(from peer.ID, e proto.Report) (string, error) {
	if err := job.PlainFileName(e.Name); err != nil {
		return "", err
	}
	if e.Rank < 0 || e.Rank >= m.plan.N {
		return "", fmt.Errorf("from rank %d of a job of %d", e.Rank, m.plan.N)
	}
	name := job.OutputName(e.Name, e.Rank)
	copyID := fmt.Sprintf("%s/%d", from, e.Replica)
	if owner, ok := m.outputs[name]; !ok {
		m.outputs[name] = copyID
	} else if owner != copyID {
		return "", nil
	}
	return name, nil
}

// onFreeze records a host's freeze or thaw of the job's processes: the
// job is frozen while any of its hosts holds it frozen.
func (m *Machine) onFreeze(h *hostRun, frozen bool, why string) {
	h.frozen = frozen
	p := job.PhaseRunning
	if !m.run.all(func(h *hostRun) bool { return !h.frozen }) {
		p = job.PhaseFrozen
	}
	if m.rec.State != job.Running || p == m.rec.Phase() {
		return
	}
	m.rec = job.SwitchPhase(m.rec, p, m.now, why[:min(len(why), job.MaxReasonLen)])
	m.emit(Save{})
	line := "continued"
	if frozen {
		line = "frozen in place: " + why
	}
	m.notice(line)
}

// onSliced records a host's RepSliced for the current run.
func (m *Machine) onSliced(total time.Duration) {
	next := job.AddSliced(m.rec, total, m.now)
	if next.Time.Sliced == m.rec.Time.Sliced {
		return
	}
	m.rec = next
	m.emit(Save{})
}
