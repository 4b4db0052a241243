package job

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// beginRun records the start of an attempt on plan's hosts.
func (ss *session) beginRun(plan Plan) {
	ss.dropIncomplete()
	hosts := make([]peer.ID, len(plan.Hosts))
	for i, h := range plan.Hosts {
		hosts[i] = h.Offer.Peer
	}
	ss.rec.Runs = appendRun(ss.rec.Runs, Run{Attempt: ss.rec.Attempts, Started: time.Now(), Hosts: hosts, From: ss.resumeFrom()})
}

// endRun records how the current attempt ended: "done", or what ended it.
func (ss *session) endRun(err error) {
	if len(ss.rec.Runs) == 0 {
		return
	}
	r := &ss.rec.Runs[len(ss.rec.Runs)-1]
	if !r.Ended.IsZero() {
		return
	}
	r.Ended, r.End = time.Now(), "done"
	if err != nil {
		r.End = err.Error()
		if len(r.End) > MaxReasonLen {
			r.End = r.End[:MaxReasonLen]
		}
	}
	ss.save()
}

// restart prepares the next attempt of a job that lost a host while it ran
// and has retries left: it counts the restart, tells the user, drops the
// output files of the run that ended (the next run writes them anew, so no
// rank's file is brought back twice) and waits the backoff.
func (ss *session) restart(f failure, rec Recovery) error {
	ss.rec.Restarts++
	ss.save()
	ss.feed.append(Update{Kind: "output", Rank: -1, Stream: "stderr",
		Line: fmt.Sprintf("%s; starting the job again on other hosts in %v (retry %d of %d), %s",
			f.why, rec.Backoff, ss.rec.Restarts, ss.sub.Desc.Retries, ss.restartWords())})
	if err := ss.dropOutputs(); err != nil {
		log.Warnw("output files of a failed run not removed", "job", ss.id, "err", err)
	}
	ss.setState(Reserving, ss.takeNote()) // status says it waits for a new match, not that it runs
	return ss.pause(rec.Backoff)
}

// dropOutputs removes the output files brought back by a run that did not
// complete.
func (ss *session) dropOutputs() error {
	ss.outputs = map[string]string{}
	ss.journal.forget("output")
	return os.RemoveAll(filepath.Join(ss.s.store.Dir(ss.id), "output")) // nil when there is none
}

// pause waits d between two attempts. Reports of the ended run are
// dropped and offers refused; a cancel or the agent's end cuts it short.
func (ss *session) pause(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return nil
		case e := <-ss.events:
			e.release()
			log.Debugw("report between two runs", "job", ss.id, "from", e.from)
		case o := <-ss.offers:
			o.reply <- proto.OfferReply{Reason: "job is between two runs"}
		case why := <-ss.cancel:
			return errCancelled{why}
		case r := <-ss.stopReq:
			ss.refuseStop(r)
		case <-ss.ctx.Done():
			return errCancelled{"agent shutting down"}
		}
	}
}
