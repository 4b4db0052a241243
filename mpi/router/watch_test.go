package router

import (
	"testing"
	"time"
)

// TestSilenceCheck: silence counts time since the last frame, check by
// check; a late check (this agent stalled) counts one step at most, and a
// frame heard since the previous check starts the count again.
func TestSilenceCheck(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 14, 56, 34, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const step = time.Second
	type check struct {
		now, heard int // ms after t0
		want       time.Duration
	}
	for _, tc := range []struct {
		name   string
		checks []check
	}{
		{"checks on time: silence is time since the last frame",
			[]check{{500, 0, 500 * time.Millisecond}, {1000, 0, time.Second}, {1500, 0, 1500 * time.Millisecond},
				{5000, 0, 2500 * time.Millisecond}}}, // the last came 3.5 s late: one step
		{"a dead agent reaches a 5 s limit within it and one check",
			[]check{{500, 0, 500 * time.Millisecond}, {1000, 0, time.Second}, {2000, 0, 2 * time.Second},
				{3000, 0, 3 * time.Second}, {4000, 0, 4 * time.Second}, {5000, 0, 5 * time.Second}}},
		{"a frame since the previous check starts again from it",
			[]check{{500, 0, 500 * time.Millisecond}, {1000, 800, 200 * time.Millisecond}, {1500, 800, 700 * time.Millisecond}}},
		{"an 11 s stall of this agent counts one step, then the remote's frames arrive",
			[]check{{500, 0, 500 * time.Millisecond}, {11500, 0, 1500 * time.Millisecond},
				{12000, 11700, 300 * time.Millisecond}}},
		{"after a stall, a frame stamped long ago counts one step at most",
			[]check{{500, 0, 500 * time.Millisecond}, {11500, 600, time.Second}}},
		{"a check before the stamp it reads counts nothing",
			[]check{{500, 0, 500 * time.Millisecond}, {900, 950, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &silence{heard: at(0), checked: at(0)}
			for i, c := range tc.checks {
				if got := s.check(at(c.now), at(c.heard), step); got != c.want {
					t.Fatalf("check %d at %d ms (heard %d ms): %v, want %v", i, c.now, c.heard, got, c.want)
				}
			}
		})
	}
}
