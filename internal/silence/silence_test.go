package silence

import (
	"testing"
	"time"
)

// TestCheck: silence counts time since the peer was last heard, check by
// check; a late check (this process stalled) counts one step at most, and
// a stamp newer than the previous one starts the count again.
func TestCheck(t *testing.T) {
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
		{"checks on time: silence is time since the peer was heard",
			[]check{{500, 0, 500 * time.Millisecond}, {1000, 0, time.Second}, {1500, 0, 1500 * time.Millisecond},
				{5000, 0, 2500 * time.Millisecond}}}, // the last came 3.5 s late: one step
		{"a dead peer reaches a 5 s limit within it and one check",
			[]check{{500, 0, 500 * time.Millisecond}, {1000, 0, time.Second}, {2000, 0, 2 * time.Second},
				{3000, 0, 3 * time.Second}, {4000, 0, 4 * time.Second}, {5000, 0, 5 * time.Second}}},
		{"heard since the previous check: counts again from then",
			[]check{{500, 0, 500 * time.Millisecond}, {1000, 800, 200 * time.Millisecond}, {1500, 800, 700 * time.Millisecond}}},
		{"an 11 s stall of this process counts one step, then the peer's bytes arrive",
			[]check{{500, 0, 500 * time.Millisecond}, {11500, 0, 1500 * time.Millisecond},
				{12000, 11700, 300 * time.Millisecond}}},
		{"after a stall, a stamp from long ago counts one step at most",
			[]check{{500, 0, 500 * time.Millisecond}, {11500, 600, time.Second}}},
		{"a check before the stamp it reads counts nothing",
			[]check{{500, 0, 500 * time.Millisecond}, {900, 950, 0}}},
		{"stalls that come back still add up",
			[]check{{3000, 0, time.Second}, {6000, 0, 2 * time.Second}, {9000, 0, 3 * time.Second}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Since(at(0))
			for i, k := range tc.checks {
				if got := c.Check(at(k.now), at(k.heard), step); got != k.want {
					t.Fatalf("check %d at %d ms (heard %d ms): %v, want %v", i, k.now, k.heard, got, k.want)
				}
			}
		})
	}
}

// TestZeroCount: a count never started (a peer the checker meets at a
// check) counts from the peer's stamp, one step at most.
func TestZeroCount(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var c Count
	if got := c.Check(t0.Add(300*time.Millisecond), t0, time.Second); got != 300*time.Millisecond {
		t.Fatalf("first check: %v, want 300ms", got)
	}
	var d Count
	if got := d.Check(t0.Add(5*time.Second), t0, time.Second); got != time.Second {
		t.Fatalf("first check long after the stamp: %v, want one step", got)
	}
}
