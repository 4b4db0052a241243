package overlay

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// role is what a known peer is to us.
type role uint8

const (
	roleNone      role = iota
	roleNear           // one of the K lowest-RTT peers
	roleLongRange      // one of the random long-range peers
)

// entry is what the table knows of one peer.
type entry struct {
	rtt          time.Duration // smoothed RTT; valid when measured
	measured     bool
	lastProbe    time.Time     // when the last probe ended; zero: never probed
	failures     int           // consecutive failed probes
	deadUntil    time.Time     // dead while now is before it
	inboundUntil time.Time     // it has us as a neighbour until then
	shown        time.Duration // rtt as the last snapshot shows it
	probing      bool
	role         role
}

func (e *entry) dead(now time.Time) bool    { return now.Before(e.deadUntil) }
func (e *entry) inbound(now time.Time) bool { return now.Before(e.inboundUntil) && !e.dead(now) }

// table is the overlay's peer table: known peers, their smoothed RTT, who is
// dead, and the neighbour set. It is plain data: the run loop is its only
// user, every method takes the time, and nothing in it does I/O, so its
// rules are tested without a network.
type table struct {
	cfg   Config
	self  peer.ID
	peers map[peer.ID]*entry
	// nextExpire is when expire has something to do at the earliest (a
	// dead mark or an inbound lease ends); zero: nothing pending. expire
	// runs every tick, and a scan of a full table every time was 4% of
	// the CPU of 350 idle agents.
	nextExpire time.Time
	// nextDue is when due has a peer to give at the earliest, as of its
	// last scan; zero: scan at the next call. Every change to an entry
	// clears it (touch). due runs every tick too.
	nextDue time.Time
}

// touch notes that an entry changed: the probes due must be looked at
// again.
func (t *table) touch() { t.nextDue = time.Time{} }

func newTable(cfg Config, self peer.ID) *table {
	return &table{cfg: cfg, self: self, peers: map[peer.ID]*entry{}}
}

// add makes p a known peer (to be measured). It reports whether p is new.
// A full table makes room by forgetting a dead peer or the farthest peer
// that is not a neighbour; if there is none, p is not added.
func (t *table) add(p peer.ID, now time.Time) bool {
	if p == t.self || p == "" {
		return false
	}
	if _, ok := t.peers[p]; ok {
		return false
	}
	if len(t.peers) >= t.cfg.MaxKnown && !t.evict(now) {
		return false
	}
	t.peers[p] = &entry{}
	t.touch()
	return true
}

// knows reports whether p is in the table, alive or dead.
func (t *table) knows(p peer.ID) bool {
	_, ok := t.peers[p]
	return ok
}

// evict forgets one peer to make room, as Evict chooses; peers being
// probed stay.
func (t *table) evict(now time.Time) bool {
	infos := make([]PeerInfo, 0, len(t.peers))
	for id, e := range t.peers {
		if e.probing {
			continue
		}
		dead := e.dead(now)
		infos = append(infos, PeerInfo{ID: id, RTT: e.rtt, Measured: e.measured, Dead: dead,
			Neighbour: !dead && (e.role != roleNone || e.inbound(now))})
	}
	i := Evict(infos)
	if i < 0 {
		return false
	}
	delete(t.peers, infos[i].ID)
	return true
}

// observe records the outcome of a probe of p: an RTT sample, or a failure.
// It reports whether the peer became dead, and whether readers would see
// the change (visible): a death, a first measurement, or a smoothed RTT
// that moved from what the last snapshot shows by more than measurement
// noise (moved). A result for a peer that is unknown or already dead
// changes nothing.
func (t *table) observe(p peer.ID, rtt time.Duration, failed bool, now time.Time) (died, visible bool) {
	e, ok := t.peers[p]
	if !ok || e.dead(now) {
		return false, false
	}
	t.touch()
	e.probing = false
	e.lastProbe = now
	if failed {
		e.failures++
		if !e.measured || e.failures >= t.cfg.MaxFailures {
			t.kill(p, now)
			return true, true
		}
		return false, false
	}
	e.failures = 0
	first := !e.measured
	e.rtt = ewma(e.rtt, rtt, t.cfg.Alpha, e.measured)
	e.measured = true
	return false, first || moved(e.shown, e.rtt)
}

// moved reports whether a smoothed RTT now differs from the one shown by
// more than measurement noise: 5% of it and 200 us more, the margin the
// submitter ranks hosts by. Every probe of a converged table moved its RTT
// by a few microseconds, and publishing each (a sort of the whole table,
// twice) was a seventh of the CPU of 350 idle agents.
func moved(shown, now time.Duration) bool {
	d := now - shown
	return max(d, -d) > shown/20+200*time.Microsecond
}

// markShown notes that a snapshot of the table now shows every RTT.
func (t *table) markShown() {
	for _, e := range t.peers {
		e.shown = e.rtt
	}
}

// ewma folds a sample into a smoothed value; the first sample sets it.
func ewma(old, sample time.Duration, alpha float64, have bool) time.Duration {
	if !have {
		return sample
	}
	return time.Duration(alpha*float64(sample) + (1-alpha)*float64(old))
}

// kill marks p dead for DeadFor: it is no neighbour, its RTT is forgotten
// and it is not probed again until the mark ends or it revives.
func (t *table) kill(p peer.ID, now time.Time) {
	e, ok := t.peers[p]
	if !ok {
		if !t.add(p, now) {
			return
		}
		e = t.peers[p]
	}
	*e = entry{deadUntil: now.Add(t.cfg.DeadFor), lastProbe: now}
	t.expireAt(e.deadUntil)
	t.touch()
}

// expireAt notes that expire has something to do at at.
func (t *table) expireAt(at time.Time) {
	if t.nextExpire.IsZero() || at.Before(t.nextExpire) {
		t.nextExpire = at
	}
}

// revive clears a dead mark when p shows it is alive (it connected to us or
// spoke our protocol); p is then measured again from scratch. It reports
// whether the table changed: p was dead or unknown.
func (t *table) revive(p peer.ID, now time.Time) bool {
	if e, ok := t.peers[p]; ok && e.dead(now) {
		*e = entry{}
		t.touch()
		return true
	}
	return t.add(p, now)
}

// disconnected notes that the connection to p dropped. A neighbour's
// disconnection counts as one failure: it is probed at once, first, and
// one more failed probe makes it dead. Other peers are left alone, so the
// connection manager can trim them.
func (t *table) disconnected(p peer.ID, now time.Time) {
	e, ok := t.peers[p]
	if !ok || !e.measured || (e.role == roleNone && !e.inbound(now)) {
		return
	}
	e.lastProbe = time.Time{}
	e.failures = max(e.failures, 1)
	t.touch()
}

// leaseInbound records that p has chosen us as a neighbour, until now +
// InboundLease, unless MaxInbound peers already have. It reports whether p
// holds a lease, and whether what the table shows changed: a renewal, the
// common case, changes nothing a reader sees.
func (t *table) leaseInbound(p peer.ID, now time.Time) (held, changed bool) {
	changed = t.revive(p, now)
	e, ok := t.peers[p]
	if !ok {
		return false, changed
	}
	was := e.inbound(now)
	if !was && t.countInbound(now) >= t.cfg.MaxInbound {
		return false, changed
	}
	e.inboundUntil = now.Add(t.cfg.InboundLease)
	t.expireAt(e.inboundUntil)
	if !was {
		t.touch() // a neighbour now: refreshed more often
	}
	return true, changed || !was
}

func (t *table) countInbound(now time.Time) int {
	n := 0
	for _, e := range t.peers {
		if e.inbound(now) {
			n++
		}
	}
	return n
}

// expire forgets peers whose dead mark has ended (discovery finds them
// again if they are still around) and ends inbound leases that ran out. It
// reports whether anything changed. It scans the table only once the
// earliest mark or lease has ended.
func (t *table) expire(now time.Time) bool {
	if t.nextExpire.IsZero() || now.Before(t.nextExpire) {
		return false
	}
	changed := false
	t.nextExpire = time.Time{}
	for id, e := range t.peers {
		switch {
		case !e.deadUntil.IsZero() && !e.dead(now) && !e.probing:
			delete(t.peers, id)
			changed = true
			continue
		case !e.deadUntil.IsZero():
			t.expireAt(e.deadUntil) // still dead, or dead and being probed: looked at again then
		}
		switch {
		case !e.inboundUntil.IsZero() && !now.Before(e.inboundUntil):
			e.inboundUntil = time.Time{}
			changed = true
		case !e.inboundUntil.IsZero():
			t.expireAt(e.inboundUntil)
		}
	}
	if changed {
		t.touch()
	}
	return changed
}
