package lifecycle

import (
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/peertest"
	"github.com/zorilla-p2p/zorilla/job"
)

func TestDirectTargets(t *testing.T) {
	ids := peertest.Peers(t, 5)
	known := []job.PeerRTT{
		{ID: ids[0], RTT: ms(1)}, {ID: ids[1], RTT: ms(10.5)}, {ID: ids[2], RTT: ms(17.1)},
		{ID: ids[3]}, {ID: ids[4], RTT: ms(1), Dead: true},
	}
	heard := func(in ...int) func(peer.ID) bool { return heardOnly(ids, in...) }
	for _, tc := range []struct {
		name   string
		p      job.Preference
		enough bool
		heard  func(peer.ID) bool
		want   []int
	}{
		{"not enough: every live peer not heard, measured or not", job.PreferRTT, false, heard(0), []int{1, 2, 3}},
		{"every live peer heard", job.PreferRTT, false, heard(0, 1, 2, 3), nil},
		{"enough, by RTT: only those closer than the plan's farthest (12.6 ms)", job.PreferRTT, true, heard(0), []int{1}},
		{"enough, default preference is RTT", "", true, heard(), []int{0, 1}},
		{"enough, by cores: any unheard peer may rank first", job.PreferCores, true, heard(0), []int{1, 2, 3}},
	} {
		got := directTargets(tc.p, tc.enough, ms(12.6), known, tc.heard)
		var want []peer.ID
		for _, i := range tc.want {
			want = append(want, ids[i])
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", tc.name, got, want)
		}
	}
}

func TestCanDirect(t *testing.T) {
	ids := peertest.Peers(t, 3)
	for _, tc := range []struct {
		name    string
		targets []peer.ID
		sent    map[peer.ID]bool
		limit   int
		stable  bool
		want    bool
	}{
		{"a few silent known peers", ids[:2], nil, 16, true, true},
		{"none", nil, nil, 16, true, false},
		{"more than the limit: a radius is worth its messages", ids, nil, 2, true, false},
		{"off", ids[:1], nil, 0, true, false},
		{"one had it directly and did not answer: the flood's turn", ids[:2], map[peer.ID]bool{ids[1]: true}, 16, true, false},
		{"others had it directly, these are new", ids[:2], map[peer.ID]bool{ids[2]: true}, 16, true, true},
		{"the overlay is still learning peers: a wider radius may find closer ones", ids[:2], nil, 16, false, false},
	} {
		if got := canDirect(tc.targets, tc.sent, tc.limit, tc.stable); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Where the loop would flood a wider radius for the known peers that have
// not answered, it sends them the advert directly when it can.
func TestNextStepDirect(t *testing.T) {
	const gap = 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		a    answered
		want step
	}{
		{"not enough, the radius brought hosts, a few known peers silent", answered{more: true, fresh: 12, direct: true}, stepDirect},
		{"the same, without direct", answered{more: true, fresh: 12}, stepNext},
		{"the radius's answers still come: they may be the silent ones", answered{more: true, trickling: true, fresh: 9, direct: true}, stepNext},
		{"feasible spread, a radius brought hosts (traced: radius 4, a full flood, for 4 agents)", answered{feasible: true, more: true, fresh: 220, stable: true, direct: true}, stepDirect},
		{"no radius left, the last brought hosts", answered{feasible: true, fresh: 12, direct: true}, stepDirect},
		{"enough, the extra radius worth it", answered{enough: true, extra: true, worth: true, feasible: true, direct: true}, stepDirect},
		{"enough, no extra radius left, a closer host silent", answered{enough: true, worth: true, feasible: true, direct: true}, stepDirect},
		{"enough, nothing closer to reach", answered{enough: true, extra: true, feasible: true, direct: true}, stepPlace},
		{"every known peer answered", answered{feasible: true, more: true, allKnown: true, stable: true, fresh: 4, direct: true}, stepPlace},
		{"enough, one still measured", answered{enough: true, measuring: true, extra: true, worth: true, feasible: true, direct: true}, stepDirect},
		{"feasible, a radius brought nobody yet, younger than the last took: wait", answered{feasible: true, more: true, quiet: 1, since: gap / 2, took: gap, empty: 3 * gap, direct: true}, stepLater},
		{"feasible, an empty radius as old as the last took", answered{feasible: true, more: true, quiet: 1, since: gap, took: gap, empty: 3 * gap, direct: true}, stepDirect},
		{"not feasible, empty radii: the schedule's backoff", answered{more: true, quiet: 3, since: gap, empty: gap, direct: true}, stepSchedule},
	} {
		if got := nextStep(tc.a); got != tc.want {
			t.Errorf("%s: step %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestDirectWait(t *testing.T) {
	ids := peertest.Peers(t, 2)
	t0 := time.Unix(1000, 0)
	rs := &reservation{heard: map[peer.ID]bool{}, targets: ids, directBy: t0.Add(400 * time.Millisecond)}
	if d, ok := rs.directWait(t0.Add(100 * time.Millisecond)); !ok || d != 300*time.Millisecond {
		t.Fatalf("both silent: %v %v", d, ok)
	}
	rs.heard[ids[0]] = true
	if d, ok := rs.directWait(t0.Add(100 * time.Millisecond)); !ok || d != 300*time.Millisecond {
		t.Fatalf("one silent: %v %v", d, ok)
	}
	if _, ok := rs.directWait(t0.Add(400 * time.Millisecond)); ok {
		t.Fatal("waited past directBy")
	}
	rs.heard[ids[1]] = true
	if _, ok := rs.directWait(t0.Add(100 * time.Millisecond)); ok {
		t.Fatal("waited with every target heard")
	}
}
