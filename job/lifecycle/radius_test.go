package lifecycle

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/peertest"
	"github.com/zorilla-p2p/zorilla/job"
)

func TestNextStep(t *testing.T) {
	const gap = 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		a    answered
		want step
	}{
		{"enough, extra worth it", answered{enough: true, extra: true, worth: true, feasible: true}, stepExtra},
		{"enough, extra cannot bring closer hosts", answered{enough: true, extra: true, feasible: true}, stepPlace},
		{"enough, extra radius flooded, a closer host still silent", answered{enough: true, worth: true, feasible: true}, stepSchedule},
		{"spread past the hosts, every known peer answered, a radius brought nobody", answered{feasible: true, more: true, allKnown: true, stable: true, quiet: 1}, stepPlace},
		{"every known peer answered, the radius brought hosts: no closer host is left to reach", answered{feasible: true, more: true, allKnown: true, stable: true, fresh: 40}, stepPlace},
		{"every known peer answered, the radius brought hosts, the overlay learnt peers meanwhile", answered{feasible: true, more: true, allKnown: true, fresh: 40}, stepNext},
		{"every known peer answered, the overlay learnt peers, the radius brought nobody", answered{feasible: true, more: true, allKnown: true, quiet: 1, since: gap, empty: gap}, stepPlace},
		{"feasible, answers still coming at the bound: they are this radius's, wait", answered{feasible: true, more: true, trickling: true, fresh: 9}, stepLater},
		{"feasible, answers still coming, no radius left: wait", answered{feasible: true, trickling: true, fresh: 9}, stepLater},
		{"not feasible, answers still coming at the bound: the next radius", answered{more: true, trickling: true, fresh: 9}, stepNext},
		{"every known peer answered while answers still come: place", answered{feasible: true, more: true, trickling: true, allKnown: true, stable: true, fresh: 3}, stepPlace},
		{"not enough, the radius brought hosts", answered{more: true, fresh: 12}, stepNext},
		{"feasible spread, the radius brought hosts", answered{feasible: true, more: true, fresh: 12}, stepNext},
		{"the last radius brought hosts: the loop is told, and ends", answered{feasible: true, fresh: 12}, stepNext},
		{"feasible, a known peer silent, radii left: the next radius at once, not the backoff", answered{feasible: true, more: true, quiet: 1, since: gap / 3, empty: gap}, stepNext},
		{"feasible, a radius brought nobody yet, younger than the last one took to answer: wait (traced: radius 5 flooded for nothing)", answered{feasible: true, more: true, quiet: 1, since: gap / 2, took: gap, empty: 3 * gap}, stepLater},
		{"feasible, a radius brought nobody in as long as the last one took: the next radius", answered{feasible: true, more: true, quiet: 1, since: gap, took: gap, empty: 3 * gap}, stepNext},
		{"feasible, a second empty radius, younger than the last took: place", answered{feasible: true, more: true, quiet: 2, since: gap / 2, took: gap, empty: 3 * gap}, stepPlace},
		{"feasible, two empty radii in a row, radii left: all reachable hosts are in", answered{feasible: true, more: true, quiet: 2, since: gap / 3, empty: gap}, stepPlace},
		{"feasible, no radius left, too soon to call the last one empty", answered{feasible: true, quiet: 1, since: gap / 2, empty: gap}, stepLater},
		{"feasible, the last radius brought nobody within the empty bound", answered{feasible: true, quiet: 1, since: gap, empty: gap}, stepPlace},
		{"feasible, two empty radii: all reachable hosts are in", answered{feasible: true, quiet: 2, since: gap, empty: gap}, stepPlace},
		{"two empty radii, but an offer still being measured", answered{feasible: true, measuring: true, quiet: 2, since: gap, empty: gap}, stepLater},
		{"every known peer answered, one still being measured", answered{feasible: true, measuring: true, more: true, allKnown: true, stable: true, quiet: 1}, stepLater},
		{"enough, one still being measured", answered{enough: true, measuring: true, extra: true, feasible: true}, stepLater},
		{"an empty radius while one is measured: the next radius goes out", answered{feasible: true, measuring: true, more: true, quiet: 1}, stepNext},
		{"not feasible, too soon to call it empty", answered{more: true, quiet: 1, since: gap / 2, empty: gap}, stepLater},
		{"not feasible, empty radii: the schedule's backoff", answered{more: true, quiet: 3, since: gap, empty: gap}, stepSchedule},
		{"not feasible, no radius left: the schedule's backoff and deadline", answered{quiet: 3, since: gap, empty: gap}, stepSchedule},
		{"not feasible, every known peer answered", answered{more: true, allKnown: true, stable: true, quiet: 1, since: gap, empty: gap}, stepSchedule},
	} {
		if got := nextStep(tc.a); got != tc.want {
			t.Errorf("%s: step %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestExtraWorth(t *testing.T) {
	ids := peertest.Peers(t, 5)
	known := []job.PeerRTT{{ID: ids[0], RTT: ms(1)}, {ID: ids[1], RTT: ms(10.5)}, {ID: ids[2], RTT: ms(11.6)}, {ID: ids[3]}}
	withDead := append(append([]job.PeerRTT(nil), known...), job.PeerRTT{ID: ids[4], Dead: true})
	for _, tc := range []struct {
		name     string
		farthest time.Duration
		known    []job.PeerRTT
		heard    func(peer.ID) bool
		want     bool
	}{
		{"nothing known: as the schedule says", ms(1), nil, heardOnly(ids), true},
		{"a closer site not heard from", ms(11.6), known, heardOnly(ids, 0, 2), true},
		{"every closer peer heard", ms(11.6), known, heardOnly(ids, 0, 1), false},
		{"same site, measured a little apart", ms(1.1), known, heardOnly(ids), false},
		{"an unmeasured peer does not count", ms(0.5), known, heardOnly(ids, 0, 1, 2), false},
		{"all heard", ms(20), known, heardOnly(ids, 0, 1, 2, 3), false},
		{"a dead peer is not waited for", ms(20), withDead, heardOnly(ids, 0, 1, 2, 3), false},
	} {
		if got := ExtraWorth(tc.farthest, tc.known, tc.heard); got != tc.want {
			t.Errorf("%s: ExtraWorth = %v, want %v", tc.name, got, tc.want)
		}
	}
	if AllKnownHeard(nil, heardOnly(ids)) || AllKnownHeard(known, heardOnly(ids, 0, 1, 2)) || !AllKnownHeard(known, heardOnly(ids, 0, 1, 2, 3)) {
		t.Error("AllKnownHeard: want true only once every known peer has answered")
	}
	if !AllKnownHeard(withDead, heardOnly(ids, 0, 1, 2, 3)) || AllKnownHeard([]job.PeerRTT{{ID: ids[4], Dead: true}}, heardOnly(ids)) {
		t.Error("AllKnownHeard: a dead peer is not waited for, and only dead peers known is knowing nobody")
	}
}

func TestLearnt(t *testing.T) {
	ids := peertest.Peers(t, 3)
	start := map[peer.ID]bool{ids[0]: true, ids[1]: true} // ids[1] was dead then
	for _, tc := range []struct {
		name  string
		known []job.PeerRTT
		want  bool
	}{
		{"the same peers", []job.PeerRTT{{ID: ids[0]}, {ID: ids[1], Dead: true}}, false},
		{"a dead peer answers again", []job.PeerRTT{{ID: ids[0]}, {ID: ids[1]}}, false},
		{"a peer forgotten", []job.PeerRTT{{ID: ids[0]}}, false},
		{"a new live peer", []job.PeerRTT{{ID: ids[0]}, {ID: ids[2]}}, true},
		{"a new peer, dead already", []job.PeerRTT{{ID: ids[0]}, {ID: ids[2], Dead: true}}, false},
	} {
		if got := Learnt(start, tc.known); got != tc.want {
			t.Errorf("%s: Learnt = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestExtraWorthFor(t *testing.T) {
	ids := peertest.Peers(t, 2)
	known := []job.PeerRTT{{ID: ids[0], RTT: ms(1)}, {ID: ids[1], RTT: ms(20)}}
	heard0 := func(p peer.ID) bool { return p == ids[0] }
	all := func(peer.ID) bool { return true }
	for _, tc := range []struct {
		name  string
		p     job.Preference
		known []job.PeerRTT
		heard func(peer.ID) bool
		want  bool
	}{
		{"rtt: the unheard peer is farther than the plan", job.PreferRTT, known, heard0, false},
		{"default preference is rtt", "", known, heard0, false},
		{"cores: an unheard peer may offer more", job.PreferCores, known, heard0, true},
		{"memory: an unheard peer may hold more", job.PreferMemory, known, heard0, true},
		{"cores: every known peer heard", job.PreferCores, known, all, false},
		{"cores: nothing known, as the schedule says", job.PreferCores, nil, heard0, true},
	} {
		if got := ExtraWorthFor(tc.p, ms(5), tc.known, tc.heard); got != tc.want {
			t.Errorf("%s: ExtraWorthFor = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A radius whose answers trickle in is answered by decideBy at the
// latest: each answer waits the answer gap again, but not past it.
func TestSettleIn(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name string
		rs   reservation
		now  time.Duration // since the radius was flooded
		want time.Duration
	}{
		{"an answer right after the flood: the gap", reservation{gap: ms(150), grace: ms(1000)}, ms(10), ms(150)},
		{"slow answers: the lag", reservation{gap: ms(150), lag: ms(400), grace: ms(1000)}, ms(100), ms(400)},
		{"a trickle near the bound: only what is left", reservation{gap: ms(150), lag: ms(400), grace: ms(1000)}, ms(900), ms(100)},
		{"a trickle past the bound: at once", reservation{gap: ms(150), lag: ms(400), grace: ms(1000)}, ms(1500), 0},
		{"every known peer in: the gap, whatever the lag", reservation{gap: ms(150), lag: ms(900), grace: ms(1000), allIn: true}, ms(100), ms(150)},
		{"enough: each answer waits again, the offer grace bounds it", reservation{gap: ms(150), lag: ms(400), grace: ms(1000), enough: true}, ms(1500), ms(400)},
		{"the lag is bounded by the grace", reservation{gap: ms(150), lag: ms(5000), grace: ms(1000)}, 0, ms(1000)},
		{"a burst past the bound: the gap after its last answer", reservation{gap: ms(150), lag: ms(400), grace: ms(1000),
			last: t0.Add(ms(1490)), burst: t0.Add(ms(1490))}, ms(1500), ms(140)},
		{"a long burst: not past the grace from its first answer", reservation{gap: ms(150), lag: ms(400), grace: ms(1000),
			last: t0.Add(ms(1490)), burst: t0.Add(ms(550))}, ms(1500), ms(50)},
	} {
		tc.rs.floodedAt = t0
		if got := tc.rs.settleIn(t0.Add(tc.now)); got != tc.want {
			t.Errorf("%s: settleIn = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A radius looked at too early is looked at again once its answers stop
// when they are still coming, else at the empty bound after its flood.
func TestLaterIn(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name      string
		rs        reservation
		now, last time.Duration // since the radius was flooded
		want      time.Duration
	}{
		{"answers still coming: the answer wait, not the rest of the grace (traced: 0.6 s lost a radius)",
			reservation{gap: ms(150), grace: ms(1000)}, ms(390), ms(300), ms(150)},
		{"still coming on a slow network: the lag", reservation{gap: ms(150), lag: ms(400), grace: ms(1000)}, ms(390), ms(300), ms(400)},
		{"no answer for the gap: the empty bound", reservation{gap: ms(150), grace: ms(1000)}, ms(390), ms(100), ms(610)},
		{"past the empty bound: the gap", reservation{gap: ms(150), grace: ms(1000)}, ms(1500), ms(100), ms(150)},
		{"nobody yet, younger than the last radius took: until as old", reservation{gap: ms(150), grace: ms(1000), radius: 4, lastFresh: 3, took: ms(400)}, ms(160), 0, ms(240)},
		{"nobody yet, as old as the last radius took: the empty bound", reservation{gap: ms(150), grace: ms(1000), radius: 4, lastFresh: 3, took: ms(400)}, ms(400), 0, ms(600)},
	} {
		tc.rs.floodedAt, tc.rs.last = t0, t0.Add(tc.last)
		if got := tc.rs.laterIn(t0.Add(tc.now)); got != tc.want {
			t.Errorf("%s: laterIn = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// ms is f milliseconds.
func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// heardOnly says that of ids only those at the places in were heard.
func heardOnly(ids []peer.ID, in ...int) func(peer.ID) bool {
	return func(p peer.ID) bool {
		for _, i := range in {
			if ids[i] == p {
				return true
			}
		}
		return false
	}
}
