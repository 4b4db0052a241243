package worker

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// holderOf: which running jobs preemption may consider, and with what.
func TestHolderOf(t *testing.T) {
	const G = int64(1) << 30
	now := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	p := Policy{MaxSwapSlice: 5 * time.Minute}
	lease := Lease{Key: "k", Job: "ja", Committed: true, Priority: 3, Cores: 2,
		Need: proto.Need{Job: "ja", N: 2, R: 1, SwapSlice: 10 * time.Minute}}
	line := Seniority{Since: now.Add(-time.Hour), Job: "ja"}
	base := heldJob{id: "ja", lease: lease, leased: true, since: line, listed: true, mem: MemHold{Declared: G, Used: 2 * G},
		released: now.Add(-7 * time.Minute), canSwap: true, started: true}
	want := Holder{Job: "ja", Priority: 3, Since: line, Cores: 2, Memory: MemHold{Declared: G, Used: 2 * G},
		Checkpoint: true, SwapSlice: 5 * time.Minute, Ran: 7 * time.Minute}
	with := func(f func(*heldJob)) heldJob { v := base; f(&v); return v }
	wantWith := func(f func(*Holder)) Holder { h := want; f(&h); return h }
	tests := []struct {
		name string
		v    heldJob
		want Holder
		ok   bool
	}{
		{"a released job: its slice capped by the owner, its time since release", base, want, true},
		{"lease gone", with(func(v *heldJob) { v.leased = false }), Holder{}, false},
		{"lease not committed", with(func(v *heldJob) { v.lease.Committed = false }), Holder{}, false},
		{"not in the line: placed by its ID alone", with(func(v *heldJob) { v.listed = false }),
			wantWith(func(h *Holder) { h.Since = Seniority{Job: "ja"} }), true},
		{"not released yet: ran nothing", with(func(v *heldJob) { v.released = time.Time{} }),
			wantWith(func(h *Holder) { h.Ran = 0 }), true},
		{"a clock step back: ran nothing", with(func(v *heldJob) { v.released = now.Add(time.Minute) }),
			wantWith(func(h *Holder) { h.Ran = 0 }), true},
		{"asked for no slice: none", with(func(v *heldJob) { v.lease.Need.SwapSlice = 0 }),
			wantWith(func(h *Holder) { h.SwapSlice = 0 }), true},
		{"without checkpoint", with(func(v *heldJob) { v.canSwap = false }),
			wantWith(func(h *Holder) { h.Checkpoint = false }), true},
		{"being swapped out: leaving", with(func(v *heldJob) { v.preempted = true }),
			wantWith(func(h *Holder) { h.Preempted, h.Leaving = true, true }), true},
		{"frozen: preempted, its memory stays", with(func(v *heldJob) { v.preempted, v.canSwap, v.lease.Frozen = true, false, true }),
			wantWith(func(h *Holder) { h.Preempted, h.Checkpoint = true, false }), true},
		{"processes not all started: left alone", with(func(v *heldJob) { v.started = false }),
			wantWith(func(h *Holder) { h.Preempted = true }), true},
		{"restarted and not released: left alone", with(func(v *heldJob) { v.swapAfterRelease = true }),
			wantWith(func(h *Holder) { h.Preempted = true }), true},
	}
	for _, tt := range tests {
		got, ok := holderOf(p, tt.v, now)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// waiters: the jobs preemption makes room for, in the line's order.
func TestWaiters(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	entry := func(j proto.JobID) waitEntry {
		a, n := advertOf(j, t0)
		return waitEntry{advert: a, need: n, prio: Seniority{Since: t0, Job: j}}
	}
	line := []waitEntry{entry("ja"), entry("jb"), entry("jc")}
	tests := []struct {
		name           string
		held, yielding []proto.JobID
		want           []proto.JobID
	}{
		{name: "the whole line, in order", want: []proto.JobID{"ja", "jb", "jc"}},
		{name: "one holding a lease here is skipped", held: []proto.JobID{"ja"}, want: []proto.JobID{"jb", "jc"}},
		{name: "one yielding to a waiting job is skipped", yielding: []proto.JobID{"jb"}, want: []proto.JobID{"ja", "jc"}},
		{name: "both", held: []proto.JobID{"jb"}, yielding: []proto.JobID{"ja"}, want: []proto.JobID{"jc"}},
		{name: "none left", held: []proto.JobID{"ja", "jb"}, yielding: []proto.JobID{"jc"}},
	}
	for _, tt := range tests {
		var got []proto.JobID
		for _, w := range waiters(line, oneOf(tt.held...), oneOf(tt.yielding...)) {
			got = append(got, w.Need.Job)
			if e := line[slices.IndexFunc(line, func(e waitEntry) bool { return e.need.Job == w.Need.Job })]; w.Since != e.prio || w.Submitter != e.advert.Submitter {
				t.Errorf("%s: %s's place or submitter lost: %+v", tt.name, w.Need.Job, w)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if len(waiters(nil, oneOf(), oneOf())) != 0 {
		t.Error("an empty line gave a job")
	}
}

// A job swapped out for another yields to it while it waits here and holds
// no lease; once it holds one, or leaves the line, the mark is gone.
func TestWaitLineYielding(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name   string
		listed bool          // the job swapped out for is in the line
		issued time.Duration // its advert's issue, from now (expires 5 min later)
		held   bool          // it holds a lease here
		want   bool
	}{
		{name: "the other waits: yield", listed: true, want: true},
		{name: "the other holds a lease: served again", listed: true, held: true},
		{name: "the other left the line: served again"},
		{name: "the other's advert expired: served again", listed: true, issued: -6 * time.Minute},
	}
	for _, tt := range tests {
		w := newWaitLine(DefaultWaitConfig())
		if tt.listed {
			a, n := advertOf("jb", now.Add(tt.issued))
			w.mu.Lock()
			w.jobs["jb"] = &waitEntry{advert: a, need: n} // as noted before it expired
			w.mu.Unlock()
		}
		w.yieldTo("ja", []proto.JobID{"jb"}, "")
		held := func(j proto.JobID) bool { return tt.held && j == "jb" }
		if got := w.yielding("ja", held); got != tt.want {
			t.Errorf("%s: yielding %v, want %v", tt.name, got, tt.want)
		}
		if again := w.yielding("ja", func(proto.JobID) bool { return false }); !tt.want && again {
			t.Errorf("%s: the mark was not forgotten", tt.name)
		}
		if w.yielding("jb", held) {
			t.Errorf("%s: a job never swapped out yields", tt.name)
		}
	}
	// The sweep forgets the marks of jobs yielded to that left the line:
	// the table does not grow with jobs that are never seen again.
	w := newWaitLine(DefaultWaitConfig())
	a, n := advertOf("jb", now)
	w.note(a, n, 0, now)
	w.yieldTo("ja", []proto.JobID{"jb"}, "")
	w.yieldTo("jc", []proto.JobID{"jd"}, "")
	w.ordered(now) // sweeps
	w.mu.Lock()
	marks := len(w.yields)
	_, kept := w.yields["ja"]
	w.mu.Unlock()
	if marks != 1 || !kept {
		t.Errorf("after a sweep: %d marks (ja's kept: %v), want ja's alone", marks, kept)
	}
}

// A mark from a resumed job's advert (Need.YieldTo) is set once per flood:
// once honoured (the job yielded to got a lease here), later copies of
// the same flood do not set it again, or the two jobs would each wait for
// the other when the second is swapped out in turn; a new flood does.
func TestWaitLineYieldFromAdvert(t *testing.T) {
	now := time.Now()
	w := lineWith(now, "ja", "jb")
	none := func(proto.JobID) bool { return false }
	jbHeld := func(j proto.JobID) bool { return j == "jb" }
	w.yieldTo("ja", []proto.JobID{"jb"}, "ja-1")
	if !w.yielding("ja", none) {
		t.Fatal("ja does not yield to jb, which waits")
	}
	if w.yielding("ja", jbHeld) {
		t.Fatal("ja still yields once jb holds a lease")
	}
	w.yieldTo("ja", []proto.JobID{"jb"}, "ja-1") // a late copy of the same flood
	if w.yielding("ja", none) {
		t.Error("a copy of a flood whose mark was honoured set it again")
	}
	w.yieldTo("ja", []proto.JobID{"jb"}, "ja-2") // the next resume's flood
	if !w.yielding("ja", none) {
		t.Error("a new flood's mark is not set")
	}
	w.yieldTo("jc", []proto.JobID{"jb"}, "jc-1") // not listed: the sweep forgets it, and its spent key
	w.drop("ja")
	w.ordered(now)
	w.mu.Lock()
	_, spent := w.spent["ja"]
	w.mu.Unlock()
	if spent {
		t.Error("the spent key of a job no longer listed is kept")
	}
}

// A job served here (a lease) ends every mark of a job yielding to it, and
// spends a flood's: when it is swapped out in its turn, the two jobs must
// not each wait for the other.
func TestWaitLineServedEndsYields(t *testing.T) {
	now := time.Now()
	w := lineWith(now, "ja", "jb", "jc")
	none := func(proto.JobID) bool { return false }
	w.yieldTo("ja", []proto.JobID{"jb"}, "ja-1") // ja resumed after a swap for jb
	w.yieldTo("jc", []proto.JobID{"jb"}, "")     // this host's own plan
	w.yieldTo("jb", []proto.JobID{"jc"}, "jb-1") // unrelated to jb being served
	w.served("jb")
	if w.yielding("ja", none) || w.yielding("jc", none) {
		t.Error("a job still yields to one that was served here")
	}
	if !w.yielding("jb", none) {
		t.Error("a mark to another job was forgotten")
	}
	w.yieldTo("ja", []proto.JobID{"jb"}, "ja-1") // a late copy of ja's flood, jb swapped out in turn
	if w.yielding("ja", none) {
		t.Error("a late copy of a spent flood set its mark again")
	}
}

// A job swapped out here for another yields to it until that job runs
// here (a committed lease, Leases.Runs), not merely until it holds an
// offer: a job not yet placeable gives an offer back to an earlier job
// that asks (DeclineYield), and the job swapped out, earlier than the one
// it made room for, would ask for and take back its hosts one by one,
// undoing the turn and leaving the other job's flood unanswered there
// (without it TestSwapTurnsWhenMemoryRunsOut failed).
func TestYieldLastsUntilTheOtherRuns(t *testing.T) {
	for _, tt := range []struct {
		name string
		jb   string // jb's lease here: "", "offered", "committed", "cancelled"
		want bool   // ja still yields
	}{
		{name: "jb waits, no lease", want: true},
		{name: "jb holds an offer only", jb: "offered", want: true},
		{name: "jb runs here", jb: "committed", want: false},
		{name: "jb gave its offer back and left the line", jb: "cancelled", want: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := newTable(t, host())
			w := newWaitLine(DefaultWaitConfig())
			now := time.Now()
			for _, j := range []proto.JobID{"ja", "jb"} {
				a, n := advertOf(j, now)
				w.note(a, n, 0, now)
			}
			w.yieldTo("ja", []proto.JobID{"jb"}, "ja-1") // ja resumed after a swap for jb
			if tt.jb != "" {
				ls, err := l.Reserve("jb", "bob", 1, 1, 1<<30, 0)
				if err != nil {
					t.Fatal(err)
				}
				switch tt.jb {
				case "committed":
					if err := l.Commit(ls.Key, "jb"); err != nil {
						t.Fatal(err)
					}
					w.drop("jb")   // as the commit does (Service.apply)
					w.served("jb") // idem
				case "cancelled":
					w.cancelled("jb", ls.Key) // not a yield it was asked for
					if _, err := l.End(ls.Key); err != nil {
						t.Fatal(err)
					}
				}
			}
			s := &Service{waiting: w, leases: l}
			if got := s.yields("ja"); got != tt.want {
				t.Errorf("yielding %v, want %v", got, tt.want)
			}
		})
	}
}

// A job swapped out for a set (PlanTurn) yields until every job of the set
// runs here or leaves the line: served as soon as the first ran, it would
// take, being earlier in the line, the room its turn made for the others.
func TestWaitLineYieldsToTheWholeSet(t *testing.T) {
	now := time.Now()
	w := lineWith(now, "ja", "jc", "jd")
	w.yieldTo("ja", []proto.JobID{"jc", "jd", "ja"}, "") // itself in the set: ignored
	if !w.yielding("ja", oneOf()) {
		t.Fatal("ja does not yield to its set, which waits")
	}
	w.served("jc")
	if !w.yielding("ja", oneOf("jc")) {
		t.Fatal("ja stopped yielding once the first of its set ran, the other still waiting")
	}
	w.mu.Lock()
	left := w.yields["ja"].to
	w.mu.Unlock()
	if !slices.Equal(left, []proto.JobID{"jd"}) {
		t.Fatalf("after jc ran, ja yields to %v, want [jd]", left)
	}
	w.served("jd")
	if w.yielding("ja", oneOf()) {
		t.Error("ja still yields once its whole set ran here")
	}
	// From an advert: a set whose other job left the line is forgotten
	// once the first runs.
	w.yieldTo("ja", []proto.JobID{"jc", "jgone"}, "ja-1")
	if w.yielding("ja", oneOf("jc")) {
		t.Error("ja yields to a job that left the line")
	}
	w.yieldTo("ja", []proto.JobID{"jc"}, "ja-1")
	if w.yielding("ja", oneOf()) {
		t.Error("a copy of a spent flood set its mark again")
	}
}

// yieldSet: a job swapped out goes behind the set let in and every job
// that waited with it, of its priority or higher, that does not run here.
func TestYieldSet(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	entry := func(j proto.JobID, honoured int) waitEntry {
		a, n := advertOf(j, t0)
		return waitEntry{advert: a, need: n, honoured: honoured}
	}
	line := []waitEntry{entry("jh", 5), entry("jb", 0), entry("jc", 0), entry("jd", 0), entry("jl", -1), entry("ja", 0)}
	tests := []struct {
		name string
		prio int
		set  []proto.JobID
		runs []proto.JobID
		want []proto.JobID
	}{
		{name: "the job it made room for first, then the set, then the line",
			set: []proto.JobID{"jc", "jd"}, want: []proto.JobID{"jd", "jc", "jh", "jb"}},
		{name: "jobs running here are not waited for", set: []proto.JobID{"jd"}, runs: []proto.JobID{"jb", "jh"},
			want: []proto.JobID{"jd", "jc"}},
		{name: "a higher-priority job waits only for its equals and betters", prio: 5, set: []proto.JobID{"jd"},
			want: []proto.JobID{"jd", "jh"}},
		{name: "a lower one waits for all", prio: -1, set: []proto.JobID{"jd"},
			want: []proto.JobID{"jd", "jh", "jb", "jc", "jl"}},
	}
	for _, tt := range tests {
		if got := yieldSet("ja", tt.prio, "jd", tt.set, line, oneOf(tt.runs...)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	var long []waitEntry
	for i := range 40 {
		long = append(long, entry(proto.JobID(fmt.Sprintf("j%02d", i)), 0))
	}
	if got := yieldSet("ja", 0, "j39", nil, long, oneOf()); len(got) != 1+proto.MaxYieldWith || got[0] != "j39" || got[1] != "j00" {
		t.Errorf("a long line: %d jobs from %v, want %d, j39 then the earliest", len(got), got[:2], 1+proto.MaxYieldWith)
	}
}

// lineWith is a waiting line listing jobs ids, their adverts issued at now.
func lineWith(now time.Time, ids ...proto.JobID) *waitLine {
	w := newWaitLine(DefaultWaitConfig())
	for _, j := range ids {
		a, n := advertOf(j, now)
		w.note(a, n, 0, now)
	}
	return w
}

// oneOf says whether a job is one of ids.
func oneOf(ids ...proto.JobID) func(proto.JobID) bool {
	return func(j proto.JobID) bool { return slices.Contains(ids, j) }
}

// Marks that close a circle (each job yielding, directly or through
// others, to itself) would hold every job of it back for as long as all
// are listed: a job does not wait for one that waits for it.
func TestWaitLineYieldCircles(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		name  string
		marks map[proto.JobID][]proto.JobID
		ja    bool // ja yields
	}{
		{name: "each for the other", marks: map[proto.JobID][]proto.JobID{"ja": {"jb"}, "jb": {"ja"}}},
		{name: "a circle of three", marks: map[proto.JobID][]proto.JobID{"ja": {"jb"}, "jb": {"jc"}, "jc": {"ja"}}},
		{name: "the rest of the set still waited for", marks: map[proto.JobID][]proto.JobID{"ja": {"jb", "jc"}, "jb": {"ja"}}, ja: true},
		{name: "a chain, no circle", marks: map[proto.JobID][]proto.JobID{"ja": {"jb"}, "jb": {"jc"}}, ja: true},
	} {
		w := lineWith(now, "ja", "jb", "jc")
		for j, to := range tt.marks {
			w.yieldTo(j, to, "")
		}
		if got := w.yielding("ja", oneOf()); got != tt.ja {
			t.Errorf("%s: ja yields %v, want %v", tt.name, got, tt.ja)
		}
		waiting := 0
		for _, j := range []proto.JobID{"ja", "jb", "jc"} {
			if !w.yielding(j, oneOf()) {
				waiting++
			}
		}
		if waiting == 0 {
			t.Errorf("%s: every job yields: none is ever served", tt.name)
		}
	}
}
