package overlay

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// PeerInfo is what the overlay knows of one peer.
type PeerInfo struct {
	ID        peer.ID       `json:"id"`
	RTT       time.Duration `json:"rtt"`      // smoothed round-trip time; 0 until measured
	Measured  bool          `json:"measured"` // RTT holds at least one sample
	Neighbour bool          `json:"neighbour"`
	Near      bool          `json:"near,omitempty"`       // one of the K nearest
	LongRange bool          `json:"long_range,omitempty"` // one of the random long-range links
	Inbound   bool          `json:"inbound,omitempty"`    // it has chosen us as its neighbour
	Dead      bool          `json:"dead,omitempty"`       // stopped answering; ignored for a while
}

// probe categories, in the order they are served.
const (
	dueFailing   = iota // a probe failed: confirm or clear quickly
	dueNeighbour        // a neighbour's RTT is refreshed often
	dueNew              // never measured
	dueRefresh          // a known peer's RTT is refreshed rarely
)

type dueProbe struct {
	id  peer.ID
	cat int
	at  time.Time
}

// due picks up to n peers to probe now, most urgent first, and marks them
// as being probed. Between changes to the table it scans it only once the
// earliest probe it saw is due.
func (t *table) due(now time.Time, n int) []peer.ID {
	if n <= 0 || (!t.nextDue.IsZero() && now.Before(t.nextDue)) {
		return nil
	}
	var list []dueProbe
	var next time.Time
	for id, e := range t.peers {
		if e.probing || e.dead(now) {
			continue
		}
		d := t.dueOf(id, e, now)
		switch {
		case !d.at.After(now):
			list = append(list, d)
		case next.IsZero() || d.at.Before(next):
			next = d.at
		}
	}
	slices.SortFunc(list, func(a, b dueProbe) int {
		return cmp.Or(cmp.Compare(a.cat, b.cat), a.at.Compare(b.at), cmp.Compare(a.id, b.id))
	})
	out := make([]peer.ID, 0, min(n, len(list)))
	for _, d := range list[:min(n, len(list))] {
		t.peers[d.id].probing = true
		out = append(out, d.id)
	}
	t.nextDue = next
	if len(list) > n {
		t.nextDue = time.Time{} // more are due now
	}
	return out
}

func (t *table) dueOf(id peer.ID, e *entry, now time.Time) dueProbe {
	switch {
	case e.failures > 0:
		return dueProbe{id, dueFailing, e.lastProbe.Add(t.cfg.RetryAfter)}
	case !e.measured:
		return dueProbe{id, dueNew, e.lastProbe}
	case e.role != roleNone || e.inbound(now):
		return dueProbe{id, dueNeighbour, e.lastProbe.Add(t.cfg.NeighbourRefresh)}
	default:
		return dueProbe{id, dueRefresh, e.lastProbe.Add(t.cfg.Refresh)}
	}
}

// reselect recomputes the neighbour set from the live measured peers with
// SelectNeighbours. It reports whether the set changed.
func (t *table) reselect(now time.Time, rng *rand.Rand) bool {
	var cands []Candidate
	for id, e := range t.peers {
		if e.measured && !e.dead(now) {
			cands = append(cands, Candidate{ID: id, RTT: e.rtt, LongRange: e.role == roleLongRange})
		}
	}
	chosen := SelectNeighbours(cands, t.cfg.K, t.cfg.Random, rng)
	roles := make(map[peer.ID]role, len(chosen))
	for i, id := range chosen {
		roles[id] = roleLongRange
		if i < t.cfg.K {
			roles[id] = roleNear
		}
	}
	changed := false
	for id, e := range t.peers {
		if r := roles[id]; e.role != r {
			e.role, changed = r, true
		}
	}
	if changed {
		t.touch()
	}
	return changed
}

// outbound lists the neighbours we chose: nearest first by RTT, then the
// long-range ones.
func (t *table) outbound() []peer.ID {
	var near, far []PeerInfo
	for id, e := range t.peers {
		switch e.role {
		case roleNear:
			near = append(near, PeerInfo{ID: id, RTT: e.rtt})
		case roleLongRange:
			far = append(far, PeerInfo{ID: id, RTT: e.rtt})
		}
	}
	slices.SortFunc(near, byInfoRTT)
	slices.SortFunc(far, byInfoRTT)
	out := make([]peer.ID, 0, len(near)+len(far))
	for _, p := range append(near, far...) {
		out = append(out, p.ID)
	}
	return out
}

// infos lists every known peer, live ones by RTT (unmeasured last), then
// the dead.
func (t *table) infos(now time.Time) []PeerInfo {
	out := make([]PeerInfo, 0, len(t.peers))
	for id, e := range t.peers {
		dead := e.dead(now)
		p := PeerInfo{
			ID: id, RTT: e.rtt, Measured: e.measured, Dead: dead,
			Near: e.role == roleNear, LongRange: e.role == roleLongRange, Inbound: e.inbound(now),
		}
		p.Neighbour = !dead && (p.Near || p.LongRange || p.Inbound)
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b PeerInfo) int {
		rank := func(p PeerInfo) int {
			switch {
			case p.Dead:
				return 2
			case !p.Measured:
				return 1
			}
			return 0
		}
		return cmp.Or(cmp.Compare(rank(a), rank(b)), byInfoRTT(a, b))
	})
	return out
}

// neighbours is what floods travel on: the peers we chose, then the peers
// that chose us, so the relation is symmetric and a flood can reach an
// agent that nobody picked as one of its nearest.
func neighbours(infos []PeerInfo, out []peer.ID) []peer.ID {
	list := slices.Clone(out)
	for _, p := range infos {
		if p.Inbound && !p.Near && !p.LongRange {
			list = append(list, p.ID)
		}
	}
	return list
}

func byInfoRTT(a, b PeerInfo) int {
	return cmp.Or(cmp.Compare(a.RTT, b.RTT), cmp.Compare(a.ID, b.ID))
}
