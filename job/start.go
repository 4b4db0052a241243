package job

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// errDetached ends a running job's session without ending the job: this
// agent is stopping, the job's hosts keep it running for their grace
// period, and the agent re-attaches when it starts again. The record
// stays as it is (running).
var errDetached = errors.New("detached: the submitter's agent stopped while the job ran")

// errCancelled ends a job as cancelled.
type errCancelled struct{ why string }

func (e errCancelled) Error() string { return "cancelled: " + e.why }

// failure is a problem of a start or a run, classified for Recover.
type failure struct {
	kind  Failure
	hosts []peer.ID // the hosts at fault
	rank  int       // for RankFailed
	code  int       // for RankFailed: the rank's exit status
	why   string    // what the user is told
}

func (f failure) Error() string { return f.why }

// startAndRun carries out the two-phase start of plan and then watches the
// job to its end. Whatever fails, the processes that started are killed
// before it returns.
func (ss *session) startAndRun(plan Plan) error {
	ss.rec.Plan = &plan // in the record before watchers hear of the start
	ss.setState(Starting, ss.takeNote())
	ss.beginRun(plan)
	ss.save()
	ss.hosts = map[peer.ID]*hostRun{}
	leases := make([]string, 0, len(plan.Hosts))
	for _, hp := range plan.Hosts {
		ss.hosts[hp.Offer.Peer] = &hostRun{plan: hp}
		leases = append(leases, hp.Offer.Lease)
	}
	ss.reports.reset(leases, nil)
	ss.kept = map[peer.ID]string{}
	ss.lost = nil
	if failed := ss.sendAll(ss.commits(plan)); len(failed) > 0 {
		f := failure{kind: HostSilent, hosts: failed,
			why: fmt.Sprintf("%d host(s) refused or did not answer the commit", len(failed))}
		return ss.stopStart(f)
	}
	err := ss.watch(&watchState{plan: plan})
	var f failure
	switch {
	case err == nil, errors.Is(err, errDetached):
	case ss.rec.State != Running && errors.As(err, &f):
		return ss.stopStart(f)
	default:
		ss.killAll(err.Error())
	}
	return err
}

// stopStart ends a failed start. Every process is killed; the hosts not at
// fault keep their slots under new lease keys (ss.kept), so that a retry
// on the same hosts and the spares can commit again. A host that could not
// keep them (it had failed too, or vanished) joins the hosts at fault in
// the failure returned.
func (ss *session) stopStart(f failure) failure {
	bad := peerSet(f.hosts)
	kill, keep := map[peer.ID]proto.LeaseRequest{}, map[peer.ID]proto.LeaseRequest{}
	for p, h := range ss.hosts {
		if h.done {
			continue
		}
		h.done = true
		req := proto.LeaseRequest{Op: proto.OpKill, Job: ss.id, Lease: h.plan.Offer.Lease, Reason: f.why}
		if bad[p] {
			kill[p] = req
			continue
		}
		req.Retry = true
		keep[p] = req
	}
	ss.sendAll(kill)
	for p, rep := range ss.send(keep) {
		if rep.Lease != "" {
			ss.kept[p] = rep.Lease
		}
	}
	for p := range ss.hosts {
		if _, ok := ss.kept[p]; !ok && !bad[p] {
			f.hosts = append(f.hosts, p)
		}
	}
	return f
}

// withKept returns plan with the lease keys its hosts kept after a failed
// start.
func (ss *session) withKept(plan Plan) Plan {
	plan.Hosts = append([]HostPlan(nil), plan.Hosts...)
	for i, h := range plan.Hosts {
		if key, ok := ss.kept[h.Offer.Peer]; ok {
			plan.Hosts[i].Offer.Lease = key
		}
	}
	return plan
}

// held lists the offers still reserved for the job after a failed start:
// the hosts that kept their slots, and the spares.
func (ss *session) held(plan Plan) []Offer {
	if ss.rec.State == Running {
		return nil // the spares went when it ran; every host was killed
	}
	var out []Offer
	for _, h := range ss.withKept(plan).Hosts {
		if _, ok := ss.kept[h.Offer.Peer]; ok {
			out = append(out, h.Offer)
		}
	}
	return append(out, plan.Cancel...)
}

// takeNote returns and clears the reason kept for the next state change.
func (ss *session) takeNote() string {
	n := ss.note
	ss.note = ""
	return n
}

// avoidHosts keeps hosts that failed this job out of its next matches.
func (ss *session) avoidHosts(hosts []peer.ID) {
	until := time.Now().Add(ss.s.cfg.Unavailable)
	for _, p := range hosts {
		if _, known := ss.avoid[p]; !known && len(ss.rec.Unavailable) < MaxUnavailable {
			ss.rec.Unavailable = append(ss.rec.Unavailable, p)
		}
		ss.avoid[p] = until
	}
}

// failedOffers returns the offers of plan held by the given hosts.
func failedOffers(plan Plan, hosts []peer.ID) []Offer {
	bad := peerSet(hosts)
	var out []Offer
	for _, o := range append(planOffers(plan), plan.Cancel...) {
		if bad[o.Peer] {
			out = append(out, o)
		}
	}
	return out
}

// commits builds the per-host commit messages of plan.
func (ss *session) commits(plan Plan) map[peer.ID]proto.LeaseRequest {
	d := ss.sub.Desc
	table := plan.RankTable()
	col := gangColumn(plan)
	out := map[peer.ID]proto.LeaseRequest{}
	timeout := d.Timeout
	if ss.rec.Phase() == PhaseSwapped {
		timeout = ss.rec.RemainingTimeout(time.Now()) // swapped out: the time it ran counts, the rest does not
	}
	for _, hp := range plan.Hosts {
		c := &proto.Commit{Key: string(ss.key), N: d.Nodes, R: d.Replicas, Program: ss.sub.Program, Args: d.Args,
			Env: envList(d.Env), Inputs: ss.sub.Inputs, Outputs: d.Outputs, Timeout: timeout,
			Procs: hp.Procs, RankTable: table, Attempt: ss.rec.Attempts, PMI: d.PMI,
			CheckpointEvery: d.CheckpointEvery, Restore: ss.restoreFor(hp.Procs), GangColumn: col}
		out[hp.Offer.Peer] = proto.LeaseRequest{Op: proto.OpCommit, Job: ss.id, Lease: hp.Offer.Lease, Commit: c}
	}
	return out
}

// envList turns a job's environment into sorted K=V strings.
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// sendAll sends one lease request per host in parallel and returns the hosts
// that refused or did not answer.
func (ss *session) sendAll(reqs map[peer.ID]proto.LeaseRequest) []peer.ID {
	var failed []peer.ID
	replies := ss.send(reqs)
	for p := range reqs {
		if _, ok := replies[p]; !ok {
			failed = append(failed, p)
		}
	}
	return failed
}

// send sends one lease request per host in parallel and returns the
// replies of the hosts that accepted.
func (ss *session) send(reqs map[peer.ID]proto.LeaseRequest) map[peer.ID]proto.LeaseReply {
	var mu sync.Mutex
	replies := map[peer.ID]proto.LeaseReply{}
	var wg sync.WaitGroup
	for p, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := ss.s.lease(ss.s.ctx, p, req)
			if err != nil {
				log.Infow("lease request failed", "job", ss.id, "op", req.Op, "host", p, "err", err)
				return
			}
			mu.Lock()
			replies[p] = rep
			mu.Unlock()
		}()
	}
	wg.Wait()
	return replies
}

// killAll tells every host of the current attempt that has not ended to
// end the job and clean up.
func (ss *session) killAll(why string) {
	reqs := map[peer.ID]proto.LeaseRequest{}
	for p, h := range ss.hosts {
		if !h.done {
			reqs[p] = proto.LeaseRequest{Op: proto.OpKill, Job: ss.id, Lease: h.plan.Offer.Lease, Reason: why}
			h.done = true
		}
	}
	ss.sendAll(reqs)
}

// cancelLeases gives back offers that will not be used.
func (ss *session) cancelLeases(offers []Offer) {
	reqs := map[peer.ID]proto.LeaseRequest{}
	for _, o := range offers {
		reqs[o.Peer] = proto.LeaseRequest{Op: proto.OpCancel, Job: ss.id, Lease: o.Lease}
	}
	if failed := ss.giveBack(reqs); len(failed) > 0 {
		log.Infow("cancel not delivered", "job", ss.id, "hosts", len(failed))
	}
}

// giveBackWaits are the pauses before a cancel or release is sent again.
var giveBackWaits = []time.Duration{250 * time.Millisecond, time.Second}

// giveBack sends cancels or releases in parallel and returns the hosts
// that never answered. One that did not get through is sent again after
// each of giveBackWaits: a lease left behind keeps the worker's slots from
// every other job until it expires, minutes later. A refusal is final: the
// worker answered, so the lease is gone already.
func (ss *session) giveBack(reqs map[peer.ID]proto.LeaseRequest) []peer.ID {
	var (
		mu     sync.Mutex
		failed []peer.ID
		wg     sync.WaitGroup
	)
	for p, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for try := 0; ; try++ {
				rep, err := ss.s.lease(ss.s.ctx, p, req)
				if err == nil || rep.Error != "" {
					return
				}
				if try == len(giveBackWaits) || !pause(ss.s.ctx, giveBackWaits[try]) {
					log.Infow("lease request failed", "job", ss.id, "op", req.Op, "host", p, "err", err)
					mu.Lock()
					failed = append(failed, p)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return failed
}

// pause waits d, or less when ctx ends; it reports whether d passed.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (ss *session) all(f func(*hostRun) bool) bool {
	for _, h := range ss.hosts {
		if !f(h) {
			return false
		}
	}
	return true
}

// hostsWhere lists the hosts for which f holds.
func (ss *session) hostsWhere(f func(*hostRun) bool) []peer.ID {
	var out []peer.ID
	for p, h := range ss.hosts {
		if f(h) {
			out = append(out, p)
		}
	}
	return out
}

// releaseAll sends phase two's release to every host not done: a host
// lost meanwhile would only make the release wait for its timeouts.
func (ss *session) releaseAll() {
	reqs := map[peer.ID]proto.LeaseRequest{}
	at := time.Now().UnixNano() // one instant for every host
	for p, h := range ss.hosts {
		if !h.done {
			reqs[p] = proto.LeaseRequest{Op: proto.OpRelease, Job: ss.id, Lease: h.plan.Offer.Lease, ReleasedAt: at}
		}
	}
	if failed := ss.giveBack(reqs); len(failed) > 0 {
		log.Infow("release not delivered", "job", ss.id, "hosts", len(failed))
	}
}
