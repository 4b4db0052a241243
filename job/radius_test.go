package job

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
)

func TestRadiusClock(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newRadiusClock(flood.Schedule{First: time.Second, Factor: 2}, 100*time.Millisecond, t0)
	// Radii are flooded at 0 s, 1 s, 3 s, 7 s; their offers are in 100 ms later.
	for _, tc := range []struct{ now, want time.Duration }{
		{0, 100 * time.Millisecond},
		{50 * time.Millisecond, 50 * time.Millisecond},
		{100 * time.Millisecond, 1000 * time.Millisecond},
		{2 * time.Second, 1100 * time.Millisecond},
		{3100 * time.Millisecond, 4000 * time.Millisecond},
	} {
		if got := c.next(t0.Add(tc.now)); got != tc.want {
			t.Errorf("at %v: next = %v, want %v", tc.now, got, tc.want)
		}
	}
}

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
		{"spread past the hosts, every known peer answered, a radius brought nobody", answered{feasible: true, allKnown: true, stable: true, quiet: 1}, stepPlace},
		{"every known peer answered, the radius brought hosts", answered{feasible: true, allKnown: true, stable: true, fresh: 40}, stepNext},
		{"every known peer answered, but the overlay is still learning peers", answered{feasible: true, allKnown: true, quiet: 1, since: gap, empty: gap}, stepSchedule},
		{"not enough, the radius brought hosts", answered{fresh: 12}, stepNext},
		{"feasible spread, the radius brought hosts", answered{feasible: true, fresh: 12}, stepNext},
		{"no answer yet, too soon to call it empty", answered{feasible: true, quiet: 2, since: gap / 2, empty: gap}, stepLater},
		{"feasible, one empty radius: the next may reach more", answered{feasible: true, quiet: 1, since: gap, empty: gap}, stepSchedule},
		{"feasible, two empty radii: all reachable hosts are in", answered{feasible: true, quiet: 2, since: gap, empty: gap}, stepPlace},
		{"not feasible, empty radii: the schedule's backoff", answered{quiet: 3, since: gap, empty: gap}, stepSchedule},
		{"not feasible, every known peer answered", answered{allKnown: true, stable: true, quiet: 1, since: gap, empty: gap}, stepSchedule},
	} {
		if got := nextStep(tc.a); got != tc.want {
			t.Errorf("%s: step %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestExtraWorth(t *testing.T) {
	ids := realPeers(t, 4)
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	known := []PeerRTT{{ids[0], ms(1)}, {ids[1], ms(10.5)}, {ids[2], ms(11.6)}, {ids[3], 0}}
	heardOnly := func(in ...int) func(peer.ID) bool {
		return func(p peer.ID) bool {
			for _, i := range in {
				if ids[i] == p {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name     string
		farthest time.Duration
		known    []PeerRTT
		heard    func(peer.ID) bool
		want     bool
	}{
		{"nothing known: as the schedule says", ms(1), nil, heardOnly(), true},
		{"a closer site not heard from", ms(11.6), known, heardOnly(0, 2), true},
		{"every closer peer heard", ms(11.6), known, heardOnly(0, 1), false},
		{"same site, measured a little apart", ms(1.1), known, heardOnly(), false},
		{"an unmeasured peer does not count", ms(0.5), known, heardOnly(0, 1, 2), false},
		{"all heard", ms(20), known, heardOnly(0, 1, 2, 3), false},
	} {
		if got := ExtraWorth(tc.farthest, tc.known, tc.heard); got != tc.want {
			t.Errorf("%s: ExtraWorth = %v, want %v", tc.name, got, tc.want)
		}
	}
	if AllKnownHeard(nil, heardOnly()) || AllKnownHeard(known, heardOnly(0, 1, 2)) || !AllKnownHeard(known, heardOnly(0, 1, 2, 3)) {
		t.Error("AllKnownHeard: want true only once every known peer has answered")
	}
}

func TestExtraWorthFor(t *testing.T) {
	ids := realPeers(t, 2)
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	known := []PeerRTT{{ids[0], ms(1)}, {ids[1], ms(20)}}
	heard0 := func(p peer.ID) bool { return p == ids[0] }
	all := func(peer.ID) bool { return true }
	for _, tc := range []struct {
		name  string
		p     Preference
		known []PeerRTT
		heard func(peer.ID) bool
		want  bool
	}{
		{"rtt: the unheard peer is farther than the plan", PreferRTT, known, heard0, false},
		{"default preference is rtt", "", known, heard0, false},
		{"cores: an unheard peer may offer more", PreferCores, known, heard0, true},
		{"memory: an unheard peer may hold more", PreferMemory, known, heard0, true},
		{"cores: every known peer heard", PreferCores, known, all, false},
		{"cores: nothing known, as the schedule says", PreferCores, nil, heard0, true},
	} {
		if got := ExtraWorthFor(tc.p, ms(5), tc.known, tc.heard); got != tc.want {
			t.Errorf("%s: ExtraWorthFor = %v, want %v", tc.name, got, tc.want)
		}
	}
}
