package worker

import (
	"context"
	"time"

	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// The fence (proto.Commit.Fence). A host cut off from the job's
// submitter cannot tell a network cut from the submitter's agent
// restarting: it keeps the job's processes for SubmitterGrace, so that a
// restarted submitter takes the job back. But a submitter that is alive
// and counted this host lost starts the job's ranks elsewhere; were the
// processes here still running, a rank without replicas would run twice
// at once. So once the submitter has answered nothing this host sent for
// the commit's Fence, the processes are frozen in place (proc.Freeze),
// and continued only when it answers again: a submitter that counted the
// host lost answers the new stream with a refusal, and they are killed.
// The count starts at the send of the latest message it answered (a
// heartbeat's echo, or the stream's hello), so it never starts later
// than the submitter's own count of this host's silence.

// minFence is the shortest fence a commit may ask for: shorter, the
// processes would freeze at every scheduling hiccup of either agent.
const minFence = 100 * time.Millisecond

// FenceBeat is the heartbeat for a job whose fence is fence: at least
// two beats fit in a fence, so one answer lost or late does not freeze it.
func FenceBeat(beat, fence time.Duration) time.Duration {
	if fence > 0 && fence/2 < beat {
		return fence / 2
	}
	return beat
}

// guardFence freezes the job's processes while its submitter's answers
// are older than the fence, and continues them when they come again,
// until ctx ends.
func (r *running) guardFence(ctx context.Context, k *sink) {
	fence := r.c.Fence
	if fence <= 0 {
		return
	}
	t := time.NewTimer(fence)
	defer t.Stop()
	for {
		quiet := k.unanswered(time.Now())
		r.fenceProcs(quiet >= fence)
		if quiet < fence {
			t.Reset(fence - quiet)
		}
		select {
		case <-t.C:
		case <-k.answers:
		case <-r.fenceKick: // the processes started
		case <-ctx.Done():
			return
		}
	}
}

// kickFence has the fence look at the job again: its processes started.
func (r *running) kickFence() {
	select {
	case r.fenceKick <- struct{}{}:
	default:
	}
}

// fenceProcs freezes (on) or continues the job's processes here, when
// they are not so already; a job not started yet is left for kickFence.
// A job that preemption froze stays frozen when the fence opens, and one
// the fence froze is left alone by the time-slice rotation and by
// preemption's thaw.
func (r *running) fenceProcs(on bool) {
	r.pre.mu.Lock()
	defer r.pre.mu.Unlock()
	if on == r.pre.fenced {
		return
	}
	r.mu.Lock()
	procs := r.procs
	r.mu.Unlock()
	if len(procs) == 0 {
		return
	}
	if on {
		if err := proc.Freeze(r.sandbox, procs); err != nil {
			log.Warnw("job not frozen at its fence; it runs on", "job", r.id, "err", err)
			return
		}
		r.pre.fenced = true
		log.Warnw("the submitter answered nothing for the job's fence: its processes are frozen here until it answers",
			"job", r.id, "fence", r.c.Fence)
		return
	}
	r.pre.fenced = false
	if !r.pre.frozen {
		if err := proc.Thaw(r.sandbox, procs); err != nil {
			log.Warnw("job not continued after its fence", "job", r.id, "err", err)
		}
	}
	log.Infow("the submitter answers again: the job's processes continue", "job", r.id)
	r.svc.kickGang() // out of its time slice, the rotation freezes it again
}
