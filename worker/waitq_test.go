package worker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

var t0 = time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC)

func TestWaitPriority(t *testing.T) {
	const skew = 2 * time.Minute
	cases := []struct {
		name          string
		issued, first time.Time
		want          time.Time
	}{
		{"honest: submitted just before it came here", t0, t0.Add(time.Second), t0},
		{"waited long, reached here late in its flood", t0, t0.Add(90 * time.Second), t0},
		{"claims far earlier than it came: clamped", t0.Add(-time.Hour), t0, t0.Add(-skew)},
		{"issued after it came (clock ahead)", t0.Add(time.Second), t0, t0.Add(time.Second)},
		{"no issue time: clamped", time.Time{}, t0, t0.Add(-skew)},
	}
	for _, c := range cases {
		got := WaitPriority("j", c.issued, c.first, skew)
		if !got.Since.Equal(c.want) || got.Job != "j" {
			t.Errorf("%s: since %v, want %v", c.name, got.Since, c.want)
		}
	}
}

func advertOf(j proto.JobID, issued time.Time) (flood.Advert, proto.Need) {
	return flood.Advert{Job: string(j), Issued: issued, Expires: issued.Add(5 * time.Minute)}, proto.Need{Job: j, N: 1, R: 1}
}

// The line serves the earliest job first whatever order the adverts came
// in, holds at most Max jobs (the earliest), and forgets an advert when it
// expires.
func TestWaitLineOrderBoundExpiry(t *testing.T) {
	w := newWaitLine(WaitConfig{Max: 3, Skew: time.Minute, OfferTimeout: time.Second})
	for _, i := range []int{3, 1, 2, 4} {
		a, n := advertOf(proto.JobID(fmt.Sprintf("j%d", i)), t0.Add(time.Duration(i)*time.Second))
		_, listed := w.note(a, n, 0, t0.Add(5*time.Second))
		if want := i != 4; listed != want {
			t.Errorf("j%d listed %v, want %v (the line holds the 3 earliest)", i, listed, want)
		}
	}
	var got []proto.JobID
	for _, e := range w.ordered(t0.Add(10 * time.Second)) {
		got = append(got, e.need.Job)
	}
	if want := []proto.JobID{"j1", "j2", "j3"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	// An earlier job arriving at a full line takes the latest one's place.
	a, n := advertOf("j0", t0)
	if _, listed := w.note(a, n, 0, t0.Add(10*time.Second)); !listed {
		t.Fatal("an earlier job was not listed in a full line")
	}
	if _, ok := w.priority("j3"); ok {
		t.Fatal("the latest job was kept over an earlier one")
	}
	// j0's advert expires first (issued at t0, 5 min life).
	if exp, ok := w.nextExpiry(); !ok || !exp.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("next expiry %v %v, want %v", exp, ok, t0.Add(5*time.Minute))
	}
	if left := w.ordered(t0.Add(5*time.Minute + 1500*time.Millisecond)); len(left) != 1 || left[0].need.Job != "j2" {
		t.Fatalf("after the adverts of j0 and j1 expired: %v", left)
	}
	w.drop("j2")
	if left := w.ordered(t0); len(left) != 0 {
		t.Fatalf("after drop: %v", left)
	}
}

// A fresher copy of a listed job's advert keeps its first sighting, so a
// job does not lose its place by being advertised again.
func TestWaitLineRefreshKeepsPlace(t *testing.T) {
	w := newWaitLine(WaitConfig{Max: 8, Skew: 0, OfferTimeout: time.Second})
	a, n := advertOf("j1", time.Time{}) // no claim: the first sighting counts
	a.Expires = t0.Add(time.Hour)
	p1, _ := w.note(a, n, 0, t0)
	p2, _ := w.note(a, n, 0, t0.Add(time.Minute))
	if !p1.Since.Equal(t0) || !p2.Since.Equal(t0) {
		t.Fatalf("priorities %v then %v, want both %v", p1.Since, p2.Since, t0)
	}
}

// Decide marks a refusal Full exactly when the same advert would be
// offered on this machine idle.
func TestDecideFull(t *testing.T) {
	busy := Usage{Jobs: 2, Cores: 4, Memory: 8 << 30}
	cases := []struct {
		name string
		p    func(p *Policy)
		u    Usage
		need proto.Need
		full bool
	}{
		{"J reached", nil, busy, need(1, proto.Requirements{}), true},
		{"no free core", nil, Usage{Jobs: 1, Cores: 4}, need(1, proto.Requirements{}), true},
		{"min cores free later", nil, Usage{Jobs: 1, Cores: 2}, need(1, proto.Requirements{MinCores: 4}), true},
		{"min cores never", nil, Usage{}, need(1, proto.Requirements{MinCores: 8}), false},
		{"memory free later", nil, Usage{Jobs: 1, Cores: 1, Memory: 7 << 30}, need(1, proto.Requirements{MinMemory: 2 << 30}), true},
		{"memory never", nil, Usage{}, need(1, proto.Requirements{MinMemory: 16 << 30}), false},
		{"busy, and a label it lacks", nil, busy, need(1, proto.Requirements{Labels: []string{"fpga"}}), false},
		{"busy, and more cores than lent", nil, busy, need(1, proto.Requirements{MinCores: 8}), false},
		{"J=0 lends nothing", func(p *Policy) { p.MaxJobs = 0 }, Usage{}, need(1, proto.Requirements{}), false},
		{"P=0 offers nothing", func(p *Policy) { p.MaxProcs = 0 }, Usage{}, need(1, proto.Requirements{}), false},
		{"busy, and denied", func(p *Policy) { p.Deny = map[peer.ID]bool{"alice": true} }, busy, need(1, proto.Requirements{}), false},
		{"accepted", nil, Usage{}, need(1, proto.Requirements{}), false},
	}
	for _, c := range cases {
		p := host()
		if c.p != nil {
			c.p(&p)
		}
		d := Decide(p, c.u, "alice", c.need)
		if d.Full != c.full {
			t.Errorf("%s: Full = %v, want %v (%s)", c.name, d.Full, c.full, d.Reason)
		}
	}
}

// A job that gives back the lease it was asked to yield stays in the
// line; one that cancels any other lease (an offer its plan did not use,
// the end of a dry run) leaves it.
func TestWaitLineCancel(t *testing.T) {
	w := newWaitLine(DefaultWaitConfig())
	for _, j := range []proto.JobID{"yielder", "done"} {
		a, n := advertOf(j, t0)
		w.note(a, n, 0, t0)
	}
	w.askedToYield("yielder", "k1")
	w.cancelled("yielder", "k1")
	w.cancelled("done", "k2")
	if _, ok := w.priority("yielder"); !ok {
		t.Error("a job that yielded as asked left the line")
	}
	if _, ok := w.priority("done"); ok {
		t.Error("a job that cancelled an unused offer stayed in the line")
	}
	w.cancelled("yielder", "k3") // asked once: its next cancel is a plain one
	if _, ok := w.priority("yielder"); ok {
		t.Error("a yielder's later cancel kept it in the line")
	}
}

// A job of higher honoured priority is served before earlier jobs of
// lower priority; equal priorities keep the line's order.
func TestWaitLineServesHigherPriorityFirst(t *testing.T) {
	w := newWaitLine(DefaultWaitConfig())
	for i, c := range []struct {
		id   proto.JobID
		prio int
	}{{"early", 0}, {"later", 0}, {"urgent", 5}, {"background", -3}} {
		a, n := advertOf(c.id, t0.Add(time.Duration(i)*time.Second))
		w.note(a, n, c.prio, t0)
	}
	var got []proto.JobID
	for _, e := range w.ordered(t0) {
		got = append(got, e.need.Job)
	}
	want := []proto.JobID{"urgent", "early", "later", "background"}
	if !slices.Equal(got, want) {
		t.Fatalf("served %v, want %v", got, want)
	}
	l, _ := newTable(t, host())
	if top, ok := w.highestWaiting("early", l, t0); !ok || top != 5 {
		t.Fatalf("highest waiting %d %v, want 5", top, ok)
	}
	if _, err := l.Reserve("urgent", "alice", 1, 1, 0, 0); err != nil {
		t.Fatal(err)
	}
	if top, _ := w.highestWaiting("early", l, t0); top != 0 {
		t.Fatalf("a job holding a lease still counts as waiting: top %d", top)
	}
}

// TestWaitLineStartersBeforeGrowers: at one priority, a job waiting to
// start is served before an earlier one that runs already and grows.
func TestWaitLineStartersBeforeGrowers(t *testing.T) {
	w := newWaitLine(DefaultWaitConfig())
	a, n := advertOf("early", t0)
	n.Grow = true
	w.note(a, n, 0, t0)
	a, n = advertOf("late", t0.Add(time.Minute))
	w.note(a, n, 0, t0.Add(time.Minute))
	a, n = advertOf("urgent", t0.Add(2*time.Minute))
	n.Grow = true
	w.note(a, n, 5, t0.Add(2*time.Minute))
	var got []proto.JobID
	for _, e := range w.ordered(t0.Add(2 * time.Minute)) {
		got = append(got, e.need.Job)
	}
	if want := []proto.JobID{"urgent", "late", "early"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v (priority first, then starters before growers)", got, want)
	}
}
