package job

import (
	"errors"
	"testing"
	"time"
)

func TestTransitions(t *testing.T) {
	all := []State{Waiting, Reserving, Starting, Running, Done, Failed, Cancelled, Stopped}
	legal := map[[2]State]bool{}
	for _, p := range [][2]State{
		{Waiting, Reserving}, {Waiting, Failed}, {Waiting, Cancelled},
		{Reserving, Starting}, {Reserving, Done}, {Reserving, Failed}, {Reserving, Cancelled},
		{Starting, Running}, {Starting, Starting}, {Starting, Reserving}, {Starting, Failed}, {Starting, Cancelled},
		{Running, Done}, {Running, Failed}, {Running, Cancelled}, {Running, Reserving}, {Running, Stopped}, {Running, Starting},
		{Stopped, Reserving}, {Stopped, Cancelled},
	} {
		legal[p] = true
	}
	t0 := time.Unix(1000, 0)
	for _, from := range all {
		for _, to := range all {
			r := NewRecord("j", "", NewDescription("p", nil, 1), t0)
			r.State = from
			next, err := Transition(r, to, t0.Add(time.Second), "why")
			if legal[[2]State{from, to}] {
				if err != nil || next.State != to {
					t.Errorf("%s -> %s refused: %v", from, to, err)
				}
				continue
			}
			if !errors.Is(err, ErrTransition) || next.State != from || len(next.History) != 1 {
				t.Errorf("%s -> %s allowed (err %v)", from, to, err)
			}
		}
	}
}

func TestRecordLife(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := NewRecord("j1", NewKey(), NewDescription("p", nil, 4), t0)
	steps := []struct {
		to  State
		why string
	}{
		{Reserving, ""}, {Starting, ""}, {Starting, "retry on spares"}, {Running, ""}, {Failed, "rank 3 exited 2"},
	}
	for i, s := range steps {
		var err error
		prev := r
		r, err = Transition(r, s.to, t0.Add(time.Duration(i+1)*time.Second), s.why)
		if err != nil {
			t.Fatal(err)
		}
		if len(prev.History) != i+1 {
			t.Fatalf("Transition modified its input's history")
		}
	}
	if r.Attempts != 2 || r.Reason != "rank 3 exited 2" || !r.State.Terminal() {
		t.Fatalf("record %+v", r)
	}
	if !r.Since().Equal(t0.Add(5*time.Second)) || !r.Updated.Equal(r.Since()) {
		t.Fatalf("Since %v Updated %v", r.Since(), r.Updated)
	}
	if _, err := Transition(r, Running, t0, ""); err == nil {
		t.Fatal("a terminal job moved on")
	}
}

func TestHistoryIsBounded(t *testing.T) {
	t0 := time.Unix(0, 0)
	r := NewRecord("j", "", NewDescription("p", nil, 1), t0)
	r, _ = Transition(r, Reserving, t0, "")
	for i := 0; i < 3*MaxHistory; i++ {
		var err error
		if r, err = Transition(r, Starting, t0.Add(time.Duration(i)*time.Second), ""); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.History) != MaxHistory || r.History[0].State != Waiting {
		t.Fatalf("history %d events, first %s", len(r.History), r.History[0].State)
	}
	if last := r.History[MaxHistory-1]; !last.At.Equal(t0.Add(time.Duration(3*MaxHistory-1) * time.Second)) {
		t.Fatalf("last event %v", last)
	}
	if r.Attempts != 3*MaxHistory {
		t.Fatalf("attempts %d", r.Attempts)
	}
}

func TestParseState(t *testing.T) {
	if s, err := ParseState("running"); err != nil || s != Running {
		t.Fatal(s, err)
	}
	if _, err := ParseState("Running"); err == nil {
		t.Fatal("accepted Running")
	}
}
