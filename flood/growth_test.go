package flood

import (
	"testing"
	"time"
)

// TestGrowth steps the schedule by hand: radius 1 at once, then each
// radius at the last one's time plus its wait (1 s, 2 s, 4 s), the wait
// growing whether a radius went on the schedule or early, and the flood
// over once the largest radius has waited its wait.
func TestGrowth(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	s := Schedule{First: time.Second, Factor: 2, MaxRadius: 3}
	g := NewGrowth(s, s.Limit(10))
	if r, ok := g.Next(); !ok || r != 1 || !g.Due().IsZero() || g.Over(t0) {
		t.Fatalf("fresh: next %d %v, due %v, over %v", r, ok, g.Due(), g.Over(t0))
	}
	steps := []struct {
		at      time.Duration // when the radius goes, from t0
		due     time.Duration // when the next is due
		wait    time.Duration
		hasNext bool
	}{
		{0, time.Second, time.Second, true},
		{time.Second, 3 * time.Second, 2 * time.Second, true},
		{1500 * time.Millisecond, 5500 * time.Millisecond, 4 * time.Second, false}, // early: the wait still grows
	}
	for i, st := range steps {
		r, ok := g.Next()
		if !ok || r != i+1 {
			t.Fatalf("step %d: next %d %v", i, r, ok)
		}
		g = g.Flooded(r, t0.Add(st.at))
		if g.Radius() != r || g.Wait() != st.wait || !g.Due().Equal(t0.Add(st.due)) {
			t.Fatalf("radius %d: radius %d wait %v due %v, want wait %v due %v", r, g.Radius(), g.Wait(), g.Due().Sub(t0), st.wait, st.due)
		}
		if _, more := g.Next(); more != st.hasNext {
			t.Fatalf("radius %d: more %v, want %v", r, more, st.hasNext)
		}
	}
	if g.Over(t0.Add(5 * time.Second)) {
		t.Fatal("over before the last wait")
	}
	if !g.Over(t0.Add(5500 * time.Millisecond)) {
		t.Fatal("not over after the last wait")
	}
}

func TestScheduleLimit(t *testing.T) {
	for _, c := range []struct{ max, ttl, want int }{{0, 10, 10}, {8, 10, 8}, {12, 10, 10}, {10, 10, 10}} {
		if got := (Schedule{First: 1, Factor: 1, MaxRadius: c.max}).Limit(c.ttl); got != c.want {
			t.Errorf("MaxRadius %d on MaxTTL %d: %d, want %d", c.max, c.ttl, got, c.want)
		}
	}
}
