package sim

import (
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

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
	j.m = lifecycle.New(w.lcfg, w.env(a), lifecycle.Start{Record: j.rec, Journal: j.journal})
	j.gone, j.detached, j.offers, j.inbox, j.tickAt = false, false, map[uint64]offerIn{}, nil, -1
	w.stats.reattached++
	w.step(j, lifecycle.Begin{})
}
