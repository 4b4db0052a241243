package submitter

import (
	"bufio"
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Preemption by checkpoint. A host that gives itself to a job
// of higher priority (worker.PlanPreemption) asks the submitter of each
// job it swaps out to stop that job with a checkpoint, as `zorilla stop
// --checkpoint` does; the submitter checks that the asking host runs the
// job (it quotes the job's lease there), stops it, and resumes it at once
// from that checkpoint: the resumed job waits, queued on the busy hosts,
// until hosts free, there or elsewhere. It is never killed: a job whose
// program takes no checkpoint in time keeps running.

// DefaultPreemptWait is how long a job swapped out for another looks for
// hosts again before it gives up (failed, not enough resources), when its
// own scheduling deadline is shorter: the job that took its hosts may run
// for a while.
const DefaultPreemptWait = time.Hour

// handlePreempt serves one PreemptMsg from a worker.
func (s *Submitter) handlePreempt(ctx context.Context, from peer.ID, st rpc.Stream) {
	_ = st.SetDeadline(time.Now().Add(10 * time.Second))
	raw, err := wire.ReadFrame(bufio.NewReader(st), proto.MaxPreemptSize)
	if err != nil {
		_ = st.Reset()
		return
	}
	msg, err := proto.DecodePreemptMsg(raw)
	if err != nil {
		log.Debugw("bad preempt request", "from", from, "err", err)
		_ = st.Reset()
		return
	}
	_ = st.SetDeadline(time.Now().Add(proto.PreemptStopTimeout + 30*time.Second))
	reply := proto.PreemptReply{Stopped: !msg.GiveWay, GivingWay: msg.GiveWay}
	if err := s.Preempt(ctx, from, msg); err != nil {
		reply = proto.PreemptReply{Reason: err.Error()}
	}
	if err := wire.WriteJSON(st, reply); err != nil {
		_ = st.Reset()
		return
	}
	_ = st.Close()
}

// Preempt swaps job msg.Job out for msg.For at the request of host from:
// it stops the job with a checkpoint, then resumes it from there, to wait
// for hosts. It returns once the job is stopped, or why it was not (the
// job then runs on). Asked to give way, a malleable job says at once
// whether it will shrink at its next quiet checkpoint.
func (s *Submitter) Preempt(ctx context.Context, from peer.ID, msg proto.PreemptMsg) error {
	ss := s.session(msg.Job)
	if ss == nil {
		return fmt.Errorf("%w: job %s is not running here", job.ErrNotPreemptible, msg.Job)
	}
	if msg.GiveWay {
		return ss.giveWay(ctx, lifecycle.GiveWay{Host: from, Lease: msg.Lease, For: msg.For, N: msg.N, Min: msg.Min})
	}
	why := preemptWhy(ss.m.Record().Desc, from, msg)
	if err := ss.stopAt(ctx, proto.PreemptStopTimeout, &lifecycle.PreemptBy{Host: from, Lease: msg.Lease, Why: why}); err != nil {
		return err
	}
	log.Infow("job swapped out", "job", msg.Job, "for", msg.For, "host", from)
	if err := s.resumeStopped(msg.Job, false, true, append([]job.ID{msg.For}, msg.With...)); err != nil {
		return fmt.Errorf("job %s stopped but not resumed (`zorilla resume %s` does it): %w", msg.Job, msg.Job, err)
	}
	return nil
}

// preemptWhy is the reason a swapped-out job's record gives: preempted
// by a job of higher priority, or, when the host honours the job taking
// its place no higher than this job asked and this job has a swap slice,
// its turn over (the worker's equal-priority rule: the host's honoured
// priority may be below the priority asked).
func preemptWhy(d job.Description, from peer.ID, msg proto.PreemptMsg) string {
	if d.SwapSlice > 0 && msg.Priority <= d.Priority {
		return fmt.Sprintf("swapped out by checkpoint for job %s (priority %d) on host %s: its swap slice of %v is over",
			msg.For, msg.Priority, job.ShortPeer(from), d.SwapSlice)
	}
	return fmt.Sprintf("preempted by job %s (priority %d) on host %s", msg.For, msg.Priority, job.ShortPeer(from))
}
