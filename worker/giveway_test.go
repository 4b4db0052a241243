package worker

import (
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// TestPlanGiveWay: a one-slot host (J = 1) held by a malleable job asks it
// to give way to a job of its priority or higher waiting to start there,
// never to a job that only grows, nor to one of lower priority; a rigid
// job is never asked; each malleable job is asked once.
func TestPlanGiveWay(t *testing.T) {
	const G = int64(1) << 30
	t0 := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	p := Policy{MaxJobs: 1, MaxProcs: 1, Cores: 1, Memory: 4 * G, OS: "linux", Arch: "amd64", MaxPriority: 10}
	holder := func(id proto.JobID, prio int, at int, malleable bool) Holder {
		return Holder{Job: id, Priority: prio, Since: Seniority{Since: t0.Add(time.Duration(at) * time.Minute), Job: id},
			Cores: 1, Memory: MemHold{Declared: G}, Checkpoint: true, Malleable: malleable}
	}
	waiter := func(id proto.JobID, prio int, grow bool) Waiter {
		return Waiter{Submitter: "bob", Need: proto.Need{Job: id, N: 2, R: 1, Priority: prio, Grow: grow},
			Since: Seniority{Since: t0.Add(time.Hour), Job: id}}
	}
	full := Usage{Jobs: 1, Cores: 1, Memory: G}
	cases := []struct {
		name    string
		u       Usage
		holders []Holder
		line    []Waiter
		want    []proto.JobID // the jobs asked, with the job each lets in
	}{
		{"a job waits: the malleable one gives way", full, []Holder{holder("m", 0, 0, true)}, []Waiter{waiter("w", 0, false)}, []proto.JobID{"m", "w"}},
		{"higher priority waits", full, []Holder{holder("m", 0, 0, true)}, []Waiter{waiter("w", 5, false)}, []proto.JobID{"m", "w"}},
		{"lower priority waits: nothing", full, []Holder{holder("m", 5, 0, true)}, []Waiter{waiter("w", 0, false)}, nil},
		{"a growing job does not push", full, []Holder{holder("m", 0, 0, true)}, []Waiter{waiter("w", 0, true)}, nil},
		{"a rigid holder is not asked", full, []Holder{holder("r", 0, 0, false)}, []Waiter{waiter("w", 0, false)}, nil},
		{"room already: nothing", Usage{}, []Holder{holder("m", 0, 0, true)}, []Waiter{waiter("w", 0, false)}, nil},
		{"asked once, for the first", full, []Holder{holder("m", 0, 0, true)}, []Waiter{waiter("w1", 0, false), waiter("w2", 0, false)},
			[]proto.JobID{"m", "w1"}},
		{"already leaving: not asked again", full, []Holder{func() Holder { h := holder("m", 0, 0, true); h.Leaving = true; return h }()},
			[]Waiter{waiter("w", 0, false)}, nil},
	}
	for _, c := range cases {
		var got []proto.JobID
		for _, a := range PlanGiveWay(p, c.u, c.holders, c.line) {
			got = append(got, a.Job, a.For.Need.Job)
		}
		if len(got) != len(c.want) || (len(got) > 0 && (got[0] != c.want[0] || got[1] != c.want[1])) {
			t.Errorf("%s: asked %v, want %v", c.name, got, c.want)
		}
	}
}

// A job that said it gives way and still runs here GiveWayPatience later
// (it gave back another host, or its resize found no quiet checkpoint)
// is a candidate again; before that, and without a give-way, the mark
// stays as it is.
func TestGiveWayLapses(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name      string
		gaveWay   bool
		after     time.Duration
		preempted bool // after lapseGiveWay
	}{
		{"no give-way: a swap-out's mark stays", false, time.Hour, true},
		{"within its patience", true, GiveWayPatience - time.Second, true},
		{"past its patience", true, GiveWayPatience, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p preemptState
			p.preempted.Store(true)
			if tc.gaveWay {
				p.gaveWayAt.Store(t0.UnixNano())
			}
			lapsed := p.lapseGiveWay(t0.Add(tc.after))
			if got := p.preempted.Load(); got != tc.preempted || lapsed == tc.preempted {
				t.Fatalf("preempted %v, lapsed %v: want preempted %v", got, lapsed, tc.preempted)
			}
			if lapsed && p.lapseGiveWay(t0.Add(2*tc.after)) {
				t.Fatal("lapsed twice")
			}
		})
	}
}
