package worker

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

func TestPlanPreemption(t *testing.T) {
	const G = int64(1) << 30
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	// A 4-core host lending 4G, J=2, that honours priorities up to 10.
	p := Policy{MaxJobs: 2, MaxProcs: 4, Cores: 4, Memory: 4 * G, OS: "linux", Arch: "amd64", MaxPriority: 10}
	h := func(id proto.JobID, prio int, min int, cores int, mem int64, ckpt bool) Holder {
		return Holder{Job: id, Priority: prio, Since: Seniority{Since: t0.Add(time.Duration(min) * time.Minute), Job: id},
			Cores: cores, Memory: MemHold{Declared: mem}, Checkpoint: ckpt}
	}
	adv := func(prio, n int, per int64) proto.Need {
		return proto.Need{Job: "jnew", N: n, R: 1, Priority: prio, MemPerProc: per}
	}
	swap := func(id proto.JobID) Preemption { return Preemption{Job: id, Action: ActionSwap} }
	freeze := func(id proto.JobID) Preemption { return Preemption{Job: id, Action: ActionFreeze} }
	a := h("ja", 0, 0, 2, 2*G, true)
	b := h("jb", 0, 1, 2, 2*G, true)
	bNoCk := h("jb", 0, 1, 2, 2*G, false)
	c5 := h("jc", 5, 2, 2, 2*G, true)
	tests := []struct {
		name    string
		from    peer.ID
		holders []Holder
		need    proto.Need
		want    []Preemption
		accept  bool
	}{
		{name: "room already: nothing preempted", holders: []Holder{a}, need: adv(5, 2, G), accept: true},
		{name: "equal priority never preempts", holders: []Holder{a, b}, need: adv(0, 2, G)},
		{name: "the latest of equal priority gives way", holders: []Holder{a, b}, need: adv(5, 2, G), want: []Preemption{swap("jb")}, accept: true},
		{name: "lowest priority first", holders: []Holder{c5, b}, need: adv(8, 2, G), want: []Preemption{swap("jb")}, accept: true},
		{name: "higher-priority holder kept, lower one taken", holders: []Holder{c5, a}, need: adv(5, 2, G), want: []Preemption{swap("ja")}, accept: true},
		{name: "both needed for 4 processes", holders: []Holder{a, b}, need: adv(5, 4, G), want: []Preemption{swap("jb"), swap("ja")}, accept: true},
		{name: "without checkpoint: frozen when memory permits", holders: []Holder{a, h("jb", 0, 1, 2, 0, false)}, need: adv(5, 2, G),
			want: []Preemption{freeze("jb")}, accept: true},
		{name: "without checkpoint and memory short: the checkpointed one is swapped instead", holders: []Holder{a, bNoCk}, need: adv(5, 2, G),
			want: []Preemption{swap("ja")}, accept: true},
		{name: "nothing can make room: nothing preempted", holders: []Holder{h("ja", 0, 0, 2, 2*G, false), bNoCk}, need: adv(5, 2, G)},
		{name: "the owner's cap: 50 honoured as 10 still beats 5", holders: []Holder{c5, a}, need: adv(50, 4, G),
			want: []Preemption{swap("ja"), swap("jc")}, accept: true},
		{name: "a capped submitter preempts nothing", from: "capped", holders: []Holder{a, b}, need: adv(50, 2, G)},
		{name: "already preempted jobs are not taken twice", holders: []Holder{a, func() Holder { x := b; x.Preempted = true; return x }()},
			need: adv(5, 4, G), want: nil, accept: true},
		{name: "a job never preempts itself", holders: []Holder{h("jnew", 0, 0, 2, 2*G, true), b}, need: adv(5, 4, G),
			want: []Preemption{swap("jb")}, accept: true},
		{name: "memory bounds what preemption can give", holders: []Holder{a, b}, need: adv(5, 4, 2*G),
			want: []Preemption{swap("jb"), swap("ja")}, accept: true},
		{name: "frozen jobs keep memory: only as much as memory allows", holders: []Holder{h("ja", 0, 0, 2, G, false), h("jb", 0, 1, 2, G, false)}, need: adv(5, 4, G),
			want: []Preemption{freeze("jb")}, accept: true}, // freezing ja too frees cores but no memory: no more processes
	}
	pc := p
	pc.PriorityCaps = map[peer.ID]int{"capped": 0}
	since := Seniority{Since: t0.Add(time.Hour), Job: "jnew"}
	for _, tt := range tests {
		from := tt.from
		if from == "" {
			from = "alice"
		}
		u := holdersUsage(tt.holders)
		got, d := PlanPreemption(pc, u, tt.holders, from, tt.need, since)
		if !reflect.DeepEqual(got, tt.want) || d.Accept != tt.accept {
			t.Errorf("%s: plan %v (accept %v: %s), want %v (accept %v)", tt.name, got, d.Accept, d.Reason, tt.want, tt.accept)
		}
		// Deterministic: the order of the holders does not matter.
		if again, _ := PlanPreemption(pc, u, reversed(tt.holders), from, tt.need, since); !reflect.DeepEqual(again, got) {
			t.Errorf("%s: holders reversed give %v, not %v", tt.name, again, got)
		}
	}
}

// holdersUsage is what holders hold, those preempted already left out.
func holdersUsage(hs []Holder) Usage {
	var u Usage
	for _, x := range hs {
		u.Jobs++
		u.Cores += x.Cores
		u.Memory += x.Memory.Charge()
	}
	for _, x := range hs {
		if x.Preempted {
			u = freed(u, x)
		}
	}
	return u
}

// reversed is a copy of hs in reverse order.
func reversed(hs []Holder) []Holder {
	rev := append([]Holder(nil), hs...)
	slices.Reverse(rev)
	return rev
}

// The hybrid technique's rule: a host refusing an advert for memory only
// swaps out, by checkpoint, a job of equal priority that has run its swap
// slice since it last started, when the advert asks for a slice too.
// hold is a job running on a host, for TestPlanPreemptionTurns: since
// minute min, its swap slice and how long it ran.
type hold struct {
	id         proto.JobID
	prio, min  int
	cores      int
	mem        int64
	ckpt       bool
	slice, ran time.Duration
}

func (x hold) holder(t0 time.Time) Holder {
	return Holder{Job: x.id, Priority: x.prio, Since: Seniority{Since: t0.Add(time.Duration(x.min) * time.Minute), Job: x.id},
		Cores: x.cores, Memory: MemHold{Declared: x.mem}, Checkpoint: x.ckpt, SwapSlice: x.slice, Ran: x.ran}
}

func TestPlanPreemptionTurns(t *testing.T) {
	const G = int64(1) << 30
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	// J=3 and 4 cores: only memory (4G) keeps a second job out.
	p := Policy{MaxJobs: 3, MaxProcs: 4, Cores: 4, Memory: 4 * G, OS: "linux", Arch: "amd64", MaxPriority: 10}
	over := hold{id: "ja", cores: 2, mem: 4 * G, ckpt: true, slice: time.Minute, ran: 2 * time.Minute}
	with := func(x hold, f func(*hold)) hold { f(&x); return x }
	adv := func(prio, n int, per int64, slice time.Duration) proto.Need {
		return proto.Need{Job: "jnew", N: n, R: 1, Priority: prio, MemPerProc: per, SwapSlice: slice}
	}
	swap := func(id proto.JobID) Preemption { return Preemption{Job: id, Action: ActionSwap} }
	tests := []struct {
		name    string
		policy  func(*Policy)
		holders []hold
		need    proto.Need
		want    []Preemption
	}{
		{name: "turn over: swapped out for its equal", holders: []hold{over}, need: adv(0, 2, G, time.Minute),
			want: []Preemption{swap("ja")}},
		{name: "exactly its slice run: swapped out", holders: []hold{with(over, func(x *hold) { x.ran = x.slice })},
			need: adv(0, 2, G, time.Minute), want: []Preemption{swap("ja")}},
		{name: "slice not over: kept", holders: []hold{with(over, func(x *hold) { x.ran = 59 * time.Second })},
			need: adv(0, 2, G, time.Minute)},
		{name: "holder opted out (slice 0): kept", holders: []hold{with(over, func(x *hold) { x.slice = 0 })},
			need: adv(0, 2, G, time.Minute)},
		{name: "holder without checkpoint: never frozen for an equal", holders: []hold{with(over, func(x *hold) { x.ckpt = false })},
			need: adv(0, 2, G, time.Minute)},
		{name: "advert opted out: swaps nobody out", holders: []hold{over}, need: adv(0, 2, G, 0)},
		{name: "higher-priority holder: kept whatever its slice", holders: []hold{with(over, func(x *hold) { x.prio = 3 })},
			need: adv(0, 2, G, time.Minute)},
		{name: "refused for J, not memory: kept", policy: func(p *Policy) { p.MaxJobs = 1 }, holders: []hold{over},
			need: adv(0, 2, G, time.Minute)},
		{name: "refused for cores, not memory: kept", holders: []hold{with(over, func(x *hold) { x.cores, x.mem = 4, G })},
			need: adv(0, 2, G, time.Minute)},
		{name: "a lower-priority job gives way first", holders: []hold{with(over, func(x *hold) { x.mem = 2 * G }),
			{id: "jl", prio: -1, min: 5, cores: 1, mem: 2 * G, ckpt: true}},
			need: adv(0, 1, 2*G, time.Minute), want: []Preemption{swap("jl")}},
		{name: "of two equals, the one whose turn is over", holders: []hold{
			with(over, func(x *hold) { x.cores, x.mem = 1, 2*G }),
			{id: "jb", min: 1, cores: 1, mem: 2 * G, ckpt: true, slice: time.Minute, ran: time.Second}},
			need: adv(0, 2, G, time.Minute), want: []Preemption{swap("ja")}},
		{name: "higher-priority advert: the usual rule, slice or not", holders: []hold{with(over, func(x *hold) { x.ran = 0 })},
			need: adv(5, 2, G, 0), want: []Preemption{swap("ja")}},
	}
	for _, tt := range tests {
		pol := p
		if tt.policy != nil {
			tt.policy(&pol)
		}
		var hs []Holder
		var u Usage
		for _, x := range tt.holders {
			hs = append(hs, x.holder(t0))
			u.Jobs++
			u.Cores += x.cores
			u.Memory += x.mem
		}
		since := Seniority{Since: t0.Add(time.Hour), Job: "jnew"}
		got, d := PlanPreemption(pol, u, hs, "alice", tt.need, since)
		if !reflect.DeepEqual(got, tt.want) || d.Accept != (tt.want != nil) {
			t.Errorf("%s: plan %v (accept %v: %s), want %v", tt.name, got, d.Accept, d.Reason, tt.want)
		}
	}
}

func TestPolicySwapSlice(t *testing.T) {
	for _, tt := range []struct {
		limit, asked, want time.Duration
	}{
		{0, 10 * time.Minute, 10 * time.Minute}, // no cap
		{0, 0, 0},                               // never stays never
		{time.Minute, 10 * time.Minute, time.Minute},
		{time.Hour, 10 * time.Minute, 10 * time.Minute},
		{time.Minute, 0, 0}, // a cap does not swap out a job that opted out
	} {
		if got := (Policy{MaxSwapSlice: tt.limit}).SwapSlice(tt.asked); got != tt.want {
			t.Errorf("cap %v, asked %v: %v, want %v", tt.limit, tt.asked, got, tt.want)
		}
	}
}

// TestSwapTurnsRotateThreeJobs' hosts (1G lent, J = 3, 3 cores, P = 1):
// two jobs of 450M run, both past their 1.5 s slice, and a third of 450M
// waits. The host plans again while its first swap-out is under way
// (the other job's slice ends, the advert comes again): the room the
// leaving job frees is counted, so the other one is not swapped out too,
// which left one job running where two fit.
func TestPlanPreemptionCountsLeaving(t *testing.T) {
	const M = int64(1) << 20
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	p := Policy{MaxJobs: 3, MaxProcs: 1, Cores: 3, Memory: 1024 * M, OS: "linux", Arch: "amd64"}
	h := func(id proto.JobID, min int, leaving bool) Holder {
		return Holder{Job: id, Since: Seniority{Since: t0.Add(time.Duration(min) * time.Minute), Job: id}, Cores: 1,
			Memory: MemHold{Declared: 450 * M}, Checkpoint: true, SwapSlice: 1500 * time.Millisecond, Ran: 2 * time.Second,
			Preempted: leaving, Leaving: leaving}
	}
	ran := func(x Holder, d time.Duration) Holder { x.Ran = d; return x }
	adv := func(per int64) proto.Need {
		return proto.Need{Job: "jc", N: 4, R: 1, MemPerProc: per, SwapSlice: 1500 * time.Millisecond}
	}
	swap := func(id proto.JobID) []Preemption { return []Preemption{{Job: id, Action: ActionSwap}} }
	tests := []struct {
		name    string
		holders []Holder
		need    proto.Need
		want    []Preemption
		accept  bool
	}{
		{"none leaving: the latest whose turn is over", []Holder{h("ja", 0, false), h("jb", 1, false)}, adv(450 * M), swap("jb"), true},
		{"the first leaving: nobody else", []Holder{h("ja", 0, true), h("jb", 1, false)}, adv(450 * M), nil, true},
		{"the latest leaving: nobody else", []Holder{h("ja", 0, false), h("jb", 1, true)}, adv(450 * M), nil, true},
		{"the leaving one is not enough: the other too", []Holder{h("ja", 0, true), h("jb", 1, false)}, adv(900 * M), swap("jb"), true},
		// The two were released 10 ms apart: a host that sees only the
		// first turn over and one that sees both pick the same job.
		{"both over: the one whose turn ended first", []Holder{ran(h("ja", 0, false), 1510*time.Millisecond),
			ran(h("jb", 1, false), 1500*time.Millisecond)}, adv(450 * M), swap("ja"), true},
		{"only the first over: the same one", []Holder{ran(h("ja", 0, false), 1505*time.Millisecond),
			ran(h("jb", 1, false), 1495*time.Millisecond)}, adv(450 * M), swap("ja"), true},
		{"the later in line ended first: it goes", []Holder{ran(h("ja", 0, false), 1500*time.Millisecond),
			ran(h("jb", 1, false), 1600*time.Millisecond)}, adv(450 * M), swap("jb"), true},
	}
	for _, tt := range tests {
		u := Usage{Jobs: len(tt.holders), Cores: len(tt.holders), Memory: int64(len(tt.holders)) * 450 * M}
		got, d := PlanPreemption(p, u, tt.holders, "alice", tt.need, Seniority{Since: t0.Add(time.Hour), Job: "jc"})
		if !reflect.DeepEqual(got, tt.want) || d.Accept != tt.accept {
			t.Errorf("%s: plan %v (accept %v: %s), want %v (accept %v)", tt.name, got, d.Accept, d.Reason, tt.want, tt.accept)
		}
	}
}

// The hosts of TestSwapTurnsRotateSets (1G lent, J = 4, 4 cores, P = 1,
// jobs of 450M), for PlanTurn.
const (
	turnM     = int64(1) << 20
	turnSlice = 1500 * time.Millisecond
)

var turnT0 = time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)

func turnAt(min int, id proto.JobID) Seniority {
	return Seniority{Since: turnT0.Add(time.Duration(min) * time.Minute), Job: id}
}

// turnHolder is a job running since minute min, its turn over by over
// (negative: not yet).
func turnHolder(id proto.JobID, min int, over time.Duration) Holder {
	return Holder{Job: id, Since: turnAt(min, id), Cores: 1, Memory: MemHold{Declared: 450 * turnM},
		Checkpoint: true, SwapSlice: turnSlice, Ran: turnSlice + over}
}

// turnWaiter is a job waiting since minute min, of priority prio,
// declaring mem per process.
func turnWaiter(id proto.JobID, min, prio int, mem int64) Waiter {
	return Waiter{Submitter: "alice", Since: turnAt(min, id),
		Need: proto.Need{Job: id, N: 4, R: 1, Priority: prio, MemPerProc: mem, SwapSlice: turnSlice}}
}

func turnSwap(id, forJob proto.JobID) Preemption {
	return Preemption{Job: id, Action: ActionSwap, For: forJob}
}

type turnCase struct {
	name    string
	holders []Holder
	line    []Waiter
	want    Turn
}

func checkTurns(t *testing.T, tests []turnCase) {
	t.Helper()
	p := Policy{MaxJobs: 4, MaxProcs: 1, Cores: 4, Memory: 1024 * turnM, OS: "linux", Arch: "amd64", MaxPriority: 10}
	for _, tt := range tests {
		u := Usage{Jobs: len(tt.holders), Cores: len(tt.holders), Memory: int64(len(tt.holders)) * 450 * turnM}
		if got := PlanTurn(p, u, tt.holders, tt.line); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// PlanTurn on TestSwapTurnsRotateSets' hosts: the waiting line gets as
// many places as the running jobs whose turn is over free, so a set of
// two that waited replaces the set of two that ran, at one turn.
func TestPlanTurn(t *testing.T) {
	const M = turnM
	h, w, swap := turnHolder, turnWaiter, turnSwap
	leaving := func(x Holder) Holder { x.Preempted, x.Leaving = true, true; return x }
	checkTurns(t, []turnCase{
		{name: "both turns over: the waiting set takes both places",
			holders: []Holder{h("ja", 0, 10*time.Millisecond), h("jb", 1, 0)},
			line:    []Waiter{w("jc", 2, 0, 450*M), w("jd", 3, 0, 450*M)},
			want:    Turn{Plan: []Preemption{swap("ja", "jc"), swap("jb", "jd")}, Set: []proto.JobID{"jc", "jd"}}},
		{name: "one turn over: one place",
			holders: []Holder{h("ja", 0, 0), h("jb", 1, -time.Second)},
			line:    []Waiter{w("jc", 2, 0, 450*M), w("jd", 3, 0, 450*M)},
			want:    Turn{Plan: []Preemption{swap("ja", "jc")}, Set: []proto.JobID{"jc"}}},
		// Released 0.5 s after ja (a set's second job placed later): its
		// turn is nearly over, and goes with ja's, so the set let in is
		// released together.
		{name: "the other's turn nearly over: the set switches whole",
			holders: []Holder{h("ja", 0, 0), h("jb", 1, -500*time.Millisecond)},
			line:    []Waiter{w("jc", 2, 0, 450*M), w("jd", 3, 0, 450*M)},
			want:    Turn{Plan: []Preemption{swap("ja", "jc"), swap("jb", "jd")}, Set: []proto.JobID{"jc", "jd"}}},
		{name: "nearly over counts only once a job leaves: a job that needs both waits",
			holders: []Holder{h("ja", 0, 0), h("jb", 1, -500*time.Millisecond)},
			line:    []Waiter{w("jc", 2, 0, 900*M)}},
		{name: "a switch under way (ja leaving): the nearly done goes too",
			holders: []Holder{leaving(h("ja", 0, time.Second)), h("jb", 1, -500*time.Millisecond)},
			line:    []Waiter{w("jc", 2, 0, 450*M), w("jd", 3, 0, 450*M)},
			want:    Turn{Plan: []Preemption{swap("jb", "jd")}, Set: []proto.JobID{"jc", "jd"}}},
		{name: "the other's turn ends while the first leaves: the second waiting job gets it",
			holders: []Holder{leaving(h("ja", 0, time.Second)), h("jb", 1, 0)},
			line:    []Waiter{w("jc", 2, 0, 450*M), w("jd", 3, 0, 450*M)},
			want:    Turn{Plan: []Preemption{swap("jb", "jd")}, Set: []proto.JobID{"jc", "jd"}}},
		{name: "one waiting job: one swapped out, as PlanPreemption does",
			holders: []Holder{h("ja", 0, 0), h("jb", 1, 0)},
			line:    []Waiter{w("jc", 2, 0, 450*M)},
			want:    Turn{Plan: []Preemption{swap("jb", "jc")}, Set: []proto.JobID{"jc"}}},
		{name: "the line fits already: nothing to do",
			holders: []Holder{h("ja", 0, 0)},
			line:    []Waiter{w("jc", 2, 0, 450*M)}},
	})
}

// PlanTurn lets a job of higher priority in first, and holds the lower
// ones back while it cannot be; an equal too large for the room freed is
// passed over.
func TestPlanTurnPriorities(t *testing.T) {
	const M = turnM
	h, w, swap := turnHolder, turnWaiter, turnSwap
	checkTurns(t, []turnCase{
		{name: "first fit: an equal too large for the room is passed over",
			holders: []Holder{h("ja", 0, 0), h("jb", 1, -time.Second)},
			line:    []Waiter{w("jc", 2, 0, 900*M), w("jd", 3, 0, 450*M)},
			want:    Turn{Plan: []Preemption{swap("ja", "jd")}, Set: []proto.JobID{"jd"}}},
		{name: "a higher-priority job that cannot be let in holds back the lower ones",
			holders: []Holder{h("ja", 0, 0), h("jb", 1, -time.Second)},
			line:    []Waiter{w("jh", 4, 5, 2000*M), w("jc", 2, 0, 450*M)}},
		{name: "a higher-priority job first; an equal whose turn has not come waits",
			holders: []Holder{h("ja", 0, -time.Second), h("jb", 1, -time.Second)},
			line:    []Waiter{w("jh", 4, 5, 450*M), w("jc", 2, 0, 450*M)},
			want:    Turn{Plan: []Preemption{swap("jb", "jh")}, Set: []proto.JobID{"jh"}}},
		{name: "a higher-priority job first, then the equal whose turn came",
			holders: []Holder{h("ja", 0, 0), h("jb", 1, -time.Second)},
			line:    []Waiter{w("jh", 4, 5, 450*M), w("jc", 2, 0, 450*M)},
			want:    Turn{Plan: []Preemption{swap("jb", "jh"), swap("ja", "jc")}, Set: []proto.JobID{"jh", "jc"}}},
	})
}

// A release's stamp is its submitter's, within bounds.
func TestReleaseTime(t *testing.T) {
	now := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name  string
		stamp time.Time
		want  time.Time
	}{
		{"no stamp (an older submitter): now", time.Time{}, now},
		{"sent 20 ms ago: the stamp", now.Add(-20 * time.Millisecond), now.Add(-20 * time.Millisecond)},
		{"from the future (a clock ahead): now, no longer slice", now.Add(time.Minute), now},
		{"far back (a clock behind): at most 5 s back", now.Add(-time.Hour), now.Add(-maxReleaseLag)},
	} {
		var ns int64
		if !tt.stamp.IsZero() {
			ns = tt.stamp.UnixNano()
		}
		if got := releaseTime(ns, now); !got.Equal(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
