package lifecycle

import (
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// A stop with a checkpoint: `zorilla stop --checkpoint` (or a host's
// preemption) asks rank 0's host to make rank 0's next Checkpoint call
// take one whatever --checkpoint-every says (OpCheckpoint), waits until a
// checkpoint newer than the last complete one at the request is complete,
// then ends every process, frees the hosts, and moves the job to Stopped,
// keeping that checkpoint's files. When the program calls no Checkpoint
// within the timeout, the stop gives up and the job runs on.

// stopping is a stop under way.
type stopping struct {
	req   Stop
	base  uint64    // the last complete checkpoint when the stop came: the next one ends the job
	by    time.Time // when it gives up
	asked bool      // rank 0's host took the OpCheckpoint
}

// onStop takes a stop request: only a released run can be stopped.
func (m *Machine) onStop(r Stop) {
	if m.phase != watching {
		m.refuseStop(r, fmt.Errorf("%w: job %s is %s; try again once it runs", job.ErrNotStoppable, m.rec.ID, m.rec.State))
		return
	}
	if err := m.stoppable(r); err != nil {
		m.refuseStop(r, err)
		return
	}
	host, lease := m.rankZero()
	if host == "" {
		m.refuseStop(r, fmt.Errorf("%w: job %s: rank 0 runs nowhere now", job.ErrNotStoppable, m.rec.ID))
		return
	}
	base := uint64(0)
	if c, ok := m.rec.LastComplete(); ok {
		base = c.Num
	}
	m.run.stop = &stopping{req: r, base: base, by: m.now.Add(r.Timeout)}
	m.lease(host, proto.LeaseRequest{Op: proto.OpCheckpoint, Lease: lease})
}

func (m *Machine) refuseStop(r Stop, err error) { m.emit(AnswerStop{Token: r.Token, Err: err}) }

// stoppable says why a run cannot be stopped now, if it cannot.
func (m *Machine) stoppable(r Stop) error {
	d := m.rec.Desc
	switch {
	case m.run.stop != nil:
		return fmt.Errorf("%w: job %s: a stop is already under way", job.ErrNotStoppable, m.rec.ID)
	case m.run.resize != nil:
		return fmt.Errorf("%w: job %s is changing size; try again once it runs at its new size", job.ErrNotStoppable, m.rec.ID)
	case r.By != nil && !m.runsUnder(r.By.Host, r.By.Lease):
		return fmt.Errorf("%w: host %s does not run job %s under that lease", job.ErrNotPreemptible, job.ShortPeer(r.By.Host), m.rec.ID)
	case d.Replicas > 1 || d.PMI:
		return fmt.Errorf("%w: job %s takes no checkpoints (replicated or --pmi); cancel it instead", job.ErrNotStoppable, m.rec.ID)
	case !m.run.released:
		return fmt.Errorf("%w: job %s is %s but not every rank is in mpi.Init yet (a program without the Zorilla MPI library never is); try again once it runs",
			job.ErrNotStoppable, m.rec.ID, m.rec.State)
	}
	return nil
}

// runsUnder reports whether host p runs the job under lease.
func (m *Machine) runsUnder(p peer.ID, lease string) bool {
	h, ok := m.run.hosts[p]
	return ok && !h.done && h.plan.Offer.Lease == lease
}

// rankZero is the host running rank 0's copy, with the job's lease there.
func (m *Machine) rankZero() (peer.ID, string) {
	for _, p := range m.run.order {
		h := m.run.hosts[p]
		for _, pr := range h.plan.Procs {
			if pr.Rank == 0 && !h.done {
				return p, h.plan.Offer.Lease
			}
		}
	}
	return "", ""
}

// onCheckpointAsked takes rank 0's host's answer to a stop's OpCheckpoint.
func (m *Machine) onCheckpointAsked(r LeaseReply) {
	if m.phase != watching || m.run.stop == nil || m.run.stop.asked {
		return
	}
	st := m.run.stop
	if r.Err != nil || !r.Reply.OK {
		why := r.Reply.Error
		if r.Err != nil {
			why = r.Err.Error()
		}
		m.run.stop = nil
		m.refuseStop(st.req, fmt.Errorf("job %s: rank 0's host %s was not told to checkpoint: %s", m.rec.ID, job.ShortPeer(r.Host), why))
		return
	}
	st.asked = true
	line := "stopping: the job ends at its next checkpoint"
	if st.req.By != nil {
		line = "swapping out at the next checkpoint: " + st.req.By.Why
	}
	m.notice(line)
}

// stopTimedOut gives up a stop: the program took no checkpoint in time.
func (m *Machine) stopTimedOut() {
	st := m.run.stop
	m.run.stop = nil
	m.refuseStop(st.req, fmt.Errorf("job %s: the program took no checkpoint within %v (does it call Comm.Checkpoint?); it keeps running",
		m.rec.ID, st.req.Timeout))
	m.notice("stop given up: no checkpoint in time; the job runs on")
}

// stopIfCheckpointed ends the run once the stop's checkpoint is complete.
func (m *Machine) stopIfCheckpointed() *outcome {
	st := m.run.stop
	if st == nil {
		return nil
	}
	c, ok := m.rec.LastComplete()
	if !ok || c.Num <= st.base {
		return nil
	}
	m.run.stop = nil
	o := outcome{kind: outStopped, num: c.Num, token: st.req.Token}
	if st.req.By != nil {
		o.reason = st.req.By.Why
	}
	o.why = o.stopWords()
	return &o
}

// stopWords says how a stopped run ended.
func (o outcome) stopWords() string {
	if o.reason != "" {
		return fmt.Sprintf("swapped out with checkpoint %d: %s", o.num, o.reason)
	}
	return fmt.Sprintf("stopped with checkpoint %d", o.num)
}

// endStop answers a stop still under way when the run ends otherwise.
func (m *Machine) endStop(out outcome) {
	st := m.run.stop
	if st == nil {
		return
	}
	m.run.stop = nil
	why := "it ended"
	if out.why != "" {
		why = out.why
	}
	m.refuseStop(st.req, fmt.Errorf("%w: job %s ended before its next checkpoint: %s", job.ErrNotStoppable, m.rec.ID, why))
}

// finishStopped records a run stopped with a checkpoint: the job is
// Stopped and keeps that checkpoint's files (only), for a resume.
func (m *Machine) finishStopped(out outcome) {
	m.setState(job.Stopped, out.why)
	m.dropIncomplete()
	m.emit(GrantFiles{})
	m.emit(Save{})
	m.notice(fmt.Sprintf("%s; `zorilla resume %s` starts it again from there", out.why, m.rec.ID))
	m.emit(AnswerStop{Token: out.token})
	m.end(false)
}
