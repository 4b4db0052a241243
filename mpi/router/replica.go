package router

import (
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Replication (P2P-MPI's protocol). Every copy of a rank computes and
// sends; each local copy's messages go into its log, and only the lead copy
// of a rank (its lowest replica still alive, as every agent computes it
// from the same losses) transmits them to every copy of the destination.
// Receiving agents acknowledge what their copies got to every agent of the
// sender, which trims the logs. When a lead is lost, the agent of the next
// copy takes over: it resends from its log what each destination copy has
// not acknowledged, and transmits from then on. Receivers' sequencers drop
// what they already have, and complete a message the old lead left
// half-way. With Config.EveryCopySends every copy transmits (the simple
// protocol, kept to measure what lead-only sending saves).

// aliveLocked reports whether copy c still counts: neither it nor its host
// was lost. j.mu is held.
func (j *Job) aliveLocked(c Proc) bool {
	return !j.lost[j.hosts[c.Rank][c.Replica]] && !j.lostCopy[c]
}

// leadLocked returns the replica that leads rank, or -1 when none is
// left; j.mu is held.
func (j *Job) leadLocked(rank int) int {
	for k := range j.hosts[rank] {
		if j.aliveLocked(Proc{rank, k}) {
			return k
		}
	}
	return -1
}

// takeoversLocked starts a takeover for every local copy that now leads
// its rank and does not transmit yet; j.mu is held.
func (j *Job) takeoversLocked() {
	if j.removed {
		return
	}
	for _, pr := range j.procs {
		if !pr.leads.Load() && pr.state != procGone && j.leadLocked(pr.Rank) == pr.Replica {
			j.wg.Add(1)
			go j.takeover(pr)
		}
	}
}

// takeover makes local copy pr the lead of its rank: it resends from its
// log what each live destination copy has not acknowledged, then transmits
// what it sends from then on (route waits for sendMu meanwhile, so nothing
// overtakes the resent frames).
func (j *Job) takeover(pr *proc) {
	defer j.wg.Done()
	pr.sendMu.Lock()
	defer pr.sendMu.Unlock()
	if pr.leads.Swap(true) {
		return
	}
	pr.q.control(j.roleFrame(true))
	if pr.transmit.Swap(true) {
		return // every copy sends: nothing to resend
	}
	log.Infof("job %s: rank %d copy %d takes over as lead", j.spec.ID, pr.Rank, pr.Replica)
	j.takeoverSyncAcks(pr)
	for _, dst := range pr.log.destinations() {
		for k, host := range j.hosts[dst] {
			if !j.alive(Proc{int(dst), k}) {
				continue
			}
			for _, fr := range pr.log.pending(dst, k) {
				err := j.forward(host, fr)
				fr.unref()
				if err != nil && j.ctx.Err() != nil {
					return
				}
			}
		}
	}
}

func (j *Job) alive(c Proc) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.aliveLocked(c)
}

// forward hands one logged MSG frame to the copy of its destination on
// host: into its queue here, or over the link.
func (j *Job) forward(host peer.ID, fr *frame) error {
	if host != j.self {
		return j.linkTo(host).send(fr.f)
	}
	body := fr.f.Body()
	n := len(body) - proto.MsgHeaderLen
	h, err := proto.DecodeMsgHeader(body, n)
	if err != nil {
		return err
	}
	j.r.local.add(fr.f)
	return j.local[h.Dst].q.deliver(j.ctx, fr, &h, n, nil)
}

// resendTo starts a new stream s of link l: every transmitting local copy
// resends what the copies on l's agent have not acknowledged, and this
// agent's delivery positions for that agent's ranks go out whole (an
// acknowledgement sent on a broken stream may have been lost).
func (j *Job) resendTo(l *link, s network.Stream) error {
	for _, pr := range j.procs {
		if !pr.transmit.Load() {
			continue
		}
		for _, dst := range pr.log.destinations() {
			k := replicaOn(j.hosts, int(dst), l.peer)
			if k < 0 {
				continue
			}
			frames := pr.log.pending(dst, k)
			for i, fr := range frames {
				err := l.resend(s, fr.f)
				fr.unref()
				if err != nil {
					for _, rest := range frames[i+1:] {
						rest.unref()
					}
					return err
				}
			}
		}
	}
	for _, pr := range j.procs {
		for k, h := range j.hosts[pr.Rank] {
			if h != l.peer {
				continue
			}
			for _, f := range pr.choices.waitingOn(k) {
				if err := l.write(s, f); err != nil {
					return err
				}
			}
		}
	}
	if err := j.resendSyncAcks(l, s); err != nil {
		return err
	}
	for _, f := range proto.EncodeAcks(j.positionsFor(l.peer)) {
		if err := l.write(s, f); err != nil {
			return err
		}
	}
	j.askAck(false)
	return nil
}

// positionsFor lists how far every local copy has received from each rank
// with a copy on agent p.
func (j *Job) positionsFor(p peer.ID) []proto.AckEntry {
	var out []proto.AckEntry
	for _, pr := range j.procs {
		for src := range j.spec.Size {
			if replicaOn(j.hosts, src, p) < 0 {
				continue
			}
			pos := pr.q.position(uint32(src))
			if pos != (position{}) {
				out = append(out, proto.AckEntry{Src: uint32(src), Dst: uint32(pr.Rank), Replica: uint32(pr.Replica),
					Seq: pos.seq, Off: pos.off})
			}
		}
	}
	return out
}

// askAck wakes the acknowledgement loop: now, or after the job's ack delay
// (Config.ackDelay) so that acknowledgements of a burst go out together.
func (j *Job) askAck(now bool) {
	c := j.ackSoon
	if now {
		c = j.ackNow
	} else if !j.ackArmed.CompareAndSwap(false, true) {
		return // the loop will gather this one too: no wake-up per message
	}
	select {
	case c <- struct{}{}:
	default:
	}
}

// ackLoop sends the local copies' delivery positions to the agents of the
// senders, so that their logs can be trimmed.
func (j *Job) ackLoop() {
	defer j.wg.Done()
	for {
		select {
		case <-j.ackNow:
		case <-j.ackSoon:
			if !j.ackWait() {
				return
			}
		case <-j.ctx.Done():
			return
		}
		j.sendAcks()
	}
}

// ackWait waits the job's ack delay, or less when an acknowledgement is
// asked for now; false when the job ended.
func (j *Job) ackWait() bool {
	t := time.NewTimer(j.cfg.ackDelay(j.spec.Replicas))
	defer t.Stop()
	select {
	case <-t.C:
	case <-j.ackNow:
	case <-j.ctx.Done():
		return false
	}
	return true
}

// sendAcks sends every position reached since the last call: to the local
// copy of the sender directly, to other agents over their links. A link
// that is not up gets them again later (they are marked again here, and
// sent whole when the link's next stream starts).
func (j *Job) sendAcks() {
	j.ackArmed.Store(false) // positions reached from here on ask for the next round
	byHost := map[peer.ID][]proto.AckEntry{}
	var buf []ackPos
	for _, pr := range j.procs {
		buf = pr.q.takeAcks(buf[:0])
		for _, a := range buf {
			e := proto.AckEntry{Src: a.src, Dst: uint32(pr.Rank), Replica: uint32(pr.Replica), Seq: a.pos.seq, Off: a.pos.off}
			for _, h := range j.hosts[a.src] {
				if h != j.self {
					byHost[h] = append(byHost[h], e)
				} else if sp := j.local[a.src]; sp != nil {
					sp.log.ack(uint32(pr.Rank), pr.Replica, a.pos)
				}
			}
		}
	}
	for h, es := range byHost {
		l := j.linkTo(h)
		s := l.upStream()
		for _, f := range proto.EncodeAcks(es) {
			if s == nil || l.write(s, f) != nil {
				s = nil
			}
		}
		if s == nil {
			for _, e := range es {
				j.local[e.Dst].q.markAck(e.Src)
			}
		}
	}
}

// acked applies acknowledgements from agent p: only for copies p runs.
func (j *Job) acked(p peer.ID, entries []proto.AckEntry) {
	for _, e := range entries {
		src, dst, k := int(e.Src), int(e.Dst), int(e.Replica)
		if src >= j.spec.Size || dst >= j.spec.Size || k >= j.spec.Replicas || j.hosts[dst][k] != p {
			continue
		}
		if sp := j.local[src]; sp != nil {
			sp.log.ack(e.Dst, k, position{seq: e.Seq, off: e.Off})
		}
	}
}

// copyGone stops every local log, and the local lead of c's rank, from
// waiting for copy c.
func (j *Job) copyGone(c Proc) {
	for _, pr := range j.procs {
		pr.log.markDead(c)
	}
	if pr := j.local[c.Rank]; pr != nil {
		pr.choices.forget(c.Replica)
	}
}

// hostGone stops every local log from waiting for the copies on p.
func (j *Job) hostGone(p peer.ID) {
	for r, copies := range j.hosts {
		for k, h := range copies {
			if h == p {
				j.copyGone(Proc{r, k})
			}
		}
	}
}

// copyLost records that agent p's copy c ended without Finalize; the next
// copy takes over, or the job fails if c was the rank's last.
func (j *Job) copyLost(p peer.ID, c proto.CopyLost) {
	rank, k := int(c.Rank), int(c.Replica)
	if rank >= j.spec.Size || k >= j.spec.Replicas || j.hosts[rank][k] != p {
		return // an agent speaks only for its own copies
	}
	j.copyDown(Proc{rank, k}, fmt.Sprintf("its process on %s ended without Finalize", p.ShortString()))
}

// copyDown records a lost copy, here or elsewhere: the job fails if its
// rank has no copy left, else the next copy takes over.
func (j *Job) copyDown(c Proc, why string) {
	j.copyGone(c)
	j.mu.Lock()
	if j.removed || j.err != nil || j.lostCopy[c] {
		j.mu.Unlock()
		return
	}
	j.lostCopy[c] = true
	orphans := orphaned(j.hosts, j.lost, j.lostCopy)
	if len(orphans) == 0 {
		j.takeoversLocked()
	}
	j.mu.Unlock()
	log.Infof("job %s: rank %d copy %d lost: %s", j.spec.ID, c.Rank, c.Replica, why)
	if len(orphans) > 0 {
		j.fail(&Failure{Cause: proto.CauseRankLost, Rank: c.Rank,
			Reason: fmt.Sprintf("rank %d has no copy left: copy %d %s", c.Rank, c.Replica, why)})
	}
}

// announceLost tells the job's other agents that local copy c is gone.
func (j *Job) announceLost(c Proc) {
	f := proto.CopyLost{Rank: uint32(c.Rank), Replica: uint32(c.Replica)}.Encode()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.removed {
		return
	}
	for _, h := range j.remote {
		if j.lost[h] || j.ended[h] {
			continue
		}
		l := j.linkLocked(h)
		j.wg.Add(1)
		j.announcing.Add(1)
		go func() {
			defer j.wg.Done()
			defer j.announcing.Done()
			l.control(f)
		}()
	}
}

// fenced ends the job here: agent p refused this agent as lost, so the
// job's other agents have carried on without its copies.
func (j *Job) fenced(p peer.ID) {
	j.fail(&Failure{Cause: proto.CauseAgentLost, Rank: -1, gone: true,
		Reason: fmt.Sprintf("agent %s counted this agent lost (cut off for longer than the heartbeat timeout); its copies end here, the others carry on", p.ShortString())})
}
