package lifecycle

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// A host that falls silent is counted lost at the first check past
// LostAfter; none is for a long stall of the watcher alone (bytes came
// meanwhile, or the stall adds one step); stalls that come back still add
// up to a loss.
func TestSilencesCheck(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const after, tick = time.Second, 250 * time.Millisecond
	step := after / 2
	type moment struct {
		at    time.Duration // when the check runs, from t0
		heard map[string]time.Duration
		lost  []string
	}
	for _, c := range []struct {
		name   string
		checks []moment
	}{
		{"silent from t0: lost at the check past LostAfter", []moment{
			{1 * tick, map[string]time.Duration{"a": 0}, nil},
			{2 * tick, map[string]time.Duration{"a": 0}, nil},
			{3 * tick, map[string]time.Duration{"a": 0}, nil},
			{4 * tick, map[string]time.Duration{"a": 0}, nil}, // exactly LostAfter: not past it
			{5 * tick, map[string]time.Duration{"a": 0}, []string{"a"}},
		}},
		{"the watcher stalls 8 s: nobody is blamed for it", []moment{
			{1 * tick, map[string]time.Duration{"a": 200 * time.Millisecond, "b": 240 * time.Millisecond}, nil},
			{1*tick + 8*time.Second, map[string]time.Duration{"a": 200 * time.Millisecond, "b": 8 * time.Second}, nil},
			{2*tick + 8*time.Second, map[string]time.Duration{"a": 8*time.Second + 300*time.Millisecond, "b": 8*time.Second + 400*time.Millisecond}, nil},
		}},
		{"stalls that come back still add up to a loss", []moment{
			{3 * time.Second, map[string]time.Duration{"a": 0}, nil},
			{6 * time.Second, map[string]time.Duration{"a": 0}, nil},
			{9 * time.Second, map[string]time.Duration{"a": 0}, []string{"a"}},
		}},
		{"heard between checks: never lost", []moment{
			{1 * tick, map[string]time.Duration{"a": 200 * time.Millisecond}, nil},
			{5 * tick, map[string]time.Duration{"a": 1100 * time.Millisecond}, nil},
			{9 * tick, map[string]time.Duration{"a": 2100 * time.Millisecond}, nil},
		}},
	} {
		s := newSilences()
		for i, m := range c.checks {
			heard := map[string]time.Time{}
			for l, d := range m.heard {
				heard[l] = t0.Add(d)
			}
			leases := slices.Sorted(maps.Keys(heard))
			got := s.check(t0.Add(m.at), leases, heard, after, step)
			slices.Sort(got)
			if !slices.Equal(got, m.lost) {
				t.Errorf("%s: check %d at %v: lost %v, want %v", c.name, i, m.at, got, m.lost)
			}
		}
	}
}
