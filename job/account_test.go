package job

import (
	"testing"
	"time"
)

func TestTimeAccounting(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	r := Record{ID: "j1", State: Waiting, Desc: Description{Timeout: 100 * time.Second}}
	steps := []struct {
		to    State
		phase Phase // a freeze or thaw instead of a state, when set
		at    int
	}{
		{to: Reserving, at: 1}, {to: Starting, at: 2}, {to: Running, at: 3},
		{phase: PhaseFrozen, at: 13}, {phase: PhaseRunning, at: 18}, // frozen 5 s
		{to: Stopped, at: 28},                                                  // ran 10+10 s, then swapped out
		{to: Reserving, at: 30}, {to: Starting, at: 40}, {to: Running, at: 48}, // swapped 20 s
		{to: Done, at: 50},
	}
	for _, s := range steps {
		if s.phase != "" {
			r = SwitchPhase(r, s.phase, at(s.at), "gang slot")
			continue
		}
		var err error
		if r, err = Transition(r, s.to, at(s.at), ""); err != nil {
			t.Fatal(err)
		}
	}
	want := TimeUse{Running: 22 * time.Second, Frozen: 5 * time.Second, Swapped: 20 * time.Second}
	if got := r.TimeAt(at(500)); got != want {
		t.Fatalf("TimeAt = %+v, want %+v (an ended job's time stands still)", got, want)
	}
	phases := []Phase{}
	for _, s := range r.Switches {
		phases = append(phases, s.To)
	}
	wantPhases := []Phase{PhaseRunning, PhaseFrozen, PhaseRunning, PhaseSwapped, PhaseRunning, PhaseOther}
	if len(phases) != len(wantPhases) {
		t.Fatalf("switches %v, want %v", phases, wantPhases)
	}
	for i := range phases {
		if phases[i] != wantPhases[i] {
			t.Fatalf("switches %v, want %v", phases, wantPhases)
		}
	}
}

func TestRemainingTimeoutCountsOnlyRunning(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	r := Record{ID: "j1", Desc: Description{Timeout: time.Minute}}
	r = SwitchPhase(r, PhaseRunning, t0, "")
	r = SwitchPhase(r, PhaseSwapped, t0.Add(40*time.Second), "preempted")
	if got := r.RemainingTimeout(t0.Add(time.Hour)); got != 20*time.Second {
		t.Fatalf("remaining %v after 40 s run and an hour swapped, want 20s", got)
	}
	r = SwitchPhase(r, PhaseRunning, t0.Add(2*time.Hour), "")
	if got := r.RemainingTimeout(t0.Add(2*time.Hour + time.Minute)); got != time.Second {
		t.Fatalf("remaining %v past the limit, want the 1 s floor", got)
	}
}

func TestSwitchesBounded(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	r := Record{ID: "j1"}
	for i := range 3 * MaxSwitches {
		p := PhaseRunning
		if i%2 == 1 {
			p = PhaseFrozen
		}
		r = SwitchPhase(r, p, t0.Add(time.Duration(i)*time.Second), "")
	}
	if len(r.Switches) != MaxSwitches {
		t.Fatalf("%d switches kept, want %d", len(r.Switches), MaxSwitches)
	}
	got := r.TimeAt(t0.Add(time.Duration(3*MaxSwitches-1) * time.Second))
	if got.Running+got.Frozen != time.Duration(3*MaxSwitches-1)*time.Second || got.Running != got.Frozen+time.Second {
		t.Fatalf("totals %+v lost time when the list was cut", got)
	}
	if again := SwitchPhase(r, r.Phase(), t0.Add(time.Hour), ""); len(again.Switches) != len(r.Switches) || again.Time != r.Time {
		t.Fatal("a switch to the current phase changed the record")
	}
}

// A gang-scheduled run on a fake clock: its hosts report their rotation's
// frozen totals (RepSliced), some twice, out of order or absurd; the run's
// sliced time is the most any host reports, bounded by the run's length,
// it counts as frozen and not as running, and not against the timeout.
func TestSlicedTime(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	s := time.Second
	r := Record{ID: "j1", State: Running, Desc: Description{Timeout: 60 * s}}
	r = AddSliced(r, 5*s, at(1)) // no run yet: nothing
	if r.Time.Sliced != 0 {
		t.Fatalf("sliced %v before any run", r.Time.Sliced)
	}
	r.Runs = []Run{{Attempt: 1, Started: at(0)}}
	r = SwitchPhase(r, PhaseRunning, at(0), "")
	for _, rep := range []struct {
		total time.Duration
		at    int
		want  time.Duration // the record's sliced time after it
	}{
		{3 * s, 5, 3 * s},       // host A
		{4 * s, 5, 4 * s},       // host B, aligned with A (a little more)
		{3 * s, 6, 4 * s},       // A's report taken again: nothing
		{-time.Hour, 7, 4 * s},  // nonsense: nothing
		{9 * s, 12, 9 * s},      // A, 5 s later
		{time.Hour, 20, 20 * s}, // a bad host: no more than the run lasted
	} {
		r = AddSliced(r, rep.total, at(rep.at))
		if r.Time.Sliced != rep.want || r.Runs[0].Sliced != rep.want {
			t.Fatalf("after %v at %d s: sliced %v (run %v), want %v", rep.total, rep.at, r.Time.Sliced, r.Runs[0].Sliced, rep.want)
		}
	}
	// A second run (a restart) counts from zero; the job's total adds up.
	r.Runs = append(r.Runs, Run{Attempt: 2, Started: at(30)})
	r = AddSliced(r, 6*s, at(40))
	if r.Time.Sliced != 26*s || r.Runs[1].Sliced != 6*s || r.Runs[0].Sliced != 20*s {
		t.Fatalf("second run: sliced %v, runs %v %v", r.Time.Sliced, r.Runs[0].Sliced, r.Runs[1].Sliced)
	}
	// 40 s in the running phase, 26 of them frozen by slices.
	got := r.TimeAt(at(40))
	if want := (TimeUse{Running: 14 * s, Frozen: 26 * s, Sliced: 26 * s}); got != want {
		t.Fatalf("TimeAt %+v, want %+v", got, want)
	}
	if rem := r.RemainingTimeout(at(40)); rem != 46*s {
		t.Fatalf("remaining timeout %v, want 46s: time frozen by slices does not count", rem)
	}
}

// AddSliced does not change the record it was given (its runs are shared).
func TestAddSlicedPure(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	r := Record{ID: "j1", Runs: []Run{{Attempt: 1, Started: t0}}}
	_ = AddSliced(r, time.Second, t0.Add(time.Minute))
	if r.Runs[0].Sliced != 0 || r.Time.Sliced != 0 {
		t.Fatalf("the original record changed: %+v", r)
	}
}
