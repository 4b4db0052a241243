package job

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// resume re-attaches a job that was running when this agent stopped: its
// session starts from the record, the journal cuts the job folder's files
// back to the reports it holds, and the job's hosts, which kept it running
// for their grace period, send again the reports after those.
func (s *Submitter) resume(rec Record) error {
	dir := s.store.Dir(rec.ID)
	st, err := replayJournal(dir)
	if err != nil {
		return err
	}
	j, err := openJournal(dir)
	if err != nil {
		return err
	}
	ss := s.newSession(rec.ID, rec.Key, Submission{Desc: rec.Desc, Program: *rec.Program, Inputs: rec.Inputs})
	ss.rec, ss.journal, ss.resumed = rec, j, st
	ss.grantCheckpoints() // a restart after this agent's own may need them
	s.launch(ss, true)
	return nil
}

// reattach takes back the run of plan after this agent restarted. Every
// host not known to be done is asked whether it still runs the job; those
// that do send again what the journal lacks, and the job is watched to its
// end as if nothing had happened. A host that no longer runs it lost its
// copies: a replicated job goes on while every rank keeps one; otherwise
// the job fails (ReasonRestarted), since starting it again would run it
// twice.
//
// The record says running once every host started its processes, which
// is before the release: the journal says which hosts had every copy in
// Init, and the release goes out again (hosts take it once) when all had,
// or when the rest, asked again, say so. A crash between the record and
// the last host's release would otherwise leave ranks waiting in Init.
func (ss *session) reattach(plan Plan) error {
	st := ss.resumed
	lost := map[proto.Proc]bool{}
	for _, l := range ss.rec.Lost {
		lost[proto.Proc{Rank: l.Rank, Replica: l.Replica}] = true
	}
	ss.lost = append([]LostCopy(nil), ss.rec.Lost...)
	ss.hosts, ss.kept = map[peer.ID]*hostRun{}, map[peer.ID]string{}
	leases := make([]string, 0, len(plan.Hosts))
	asks := map[peer.ID]proto.LeaseRequest{}
	for _, hp := range plan.Hosts {
		lease := hp.Offer.Lease
		h := &hostRun{plan: hp, started: true, ready: st.ready[lease], seq: st.seq[lease], done: st.done[lease]}
		allLost := true
		for _, p := range hp.Procs {
			allLost = allLost && lost[p]
		}
		h.done = h.done || allLost
		ss.hosts[hp.Offer.Peer] = h
		leases = append(leases, lease)
		if !h.done {
			ss.s.h.Peerstore().AddAddrs(hp.Offer.Peer, hp.Offer.Addrs, peerstore.TempAddrTTL)
			asks[hp.Offer.Peer] = proto.LeaseRequest{Op: proto.OpResume, Job: ss.id, Lease: lease}
		}
	}
	ss.reports.reset(leases, st.seq)
	if len(plan.Cancel) > 0 {
		// The cancels of the unused offers may not have gone out before
		// the agent stopped: their leases would hold slots until they
		// expire. A worker that no longer holds one refuses, which is final.
		ss.s.wg.Add(1)
		go func() {
			defer ss.s.wg.Done()
			ss.cancelLeases(plan.Cancel)
		}()
	}
	w := &watchState{plan: plan, running: true}
	gone := ss.sendAll(asks)
	ss.feed.append(Update{Kind: "output", Rank: -1, Stream: "stderr",
		Line: fmt.Sprintf("re-attached after this agent restarted: %d of %d hosts still run the job", len(asks)-len(gone), len(asks))})
	for _, p := range gone {
		if ss.sub.Desc.Replicas == 1 {
			err := fmt.Errorf("%s: host %s no longer runs the job", ReasonRestarted, shortPeer(p))
			ss.killAll(err.Error())
			return err
		}
		if err := ss.onLost(w, p, "gone after the submitter restarted"); err != nil {
			ss.killAll(err.Error())
			return errors.New(ReasonRestarted + ": " + err.Error()) // not a failure to recover from: never run twice
		}
	}
	if ss.all(func(h *hostRun) bool { return h.done }) {
		return nil
	}
	ss.releaseIfReady(w)
	err := ss.watch(w)
	if err != nil && !errors.Is(err, errDetached) {
		ss.killAll(err.Error())
	}
	return err
}
