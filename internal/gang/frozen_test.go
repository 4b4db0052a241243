package gang

import (
	"testing"
	"time"
)

// A rotation at 0.5 s slices over 4 columns, on a fake clock: the job runs
// one slice in four, so it is frozen 1.5 s a round; its total is reported
// at most once per interval, and a final report carries what is left.
func TestFrozenClockRotation(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var c FrozenClock
	var reports []time.Duration
	for round := 0; round < 20; round++ { // 40 s
		start := round * 2000
		c.Thaw(at(start)) // its slice
		if tot, ok := c.Due(at(start), 5*time.Second, false); ok {
			reports = append(reports, tot)
		}
		c.Freeze(at(start + 500))
		c.Freeze(at(start + 1000)) // asked again at every boundary: no change
		c.Freeze(at(start + 1500))
	}
	if !c.Frozen() {
		t.Fatal("not frozen after a freeze")
	}
	if got, want := c.Total(at(40_000)), 20*1500*time.Millisecond; got != want {
		t.Fatalf("total %v, want %v", got, want)
	}
	// 40 s of rotation, a report at most every 5 s: 8 at most, not 20.
	if len(reports) == 0 || len(reports) > 8 {
		t.Fatalf("%d reports %v: want 1..8", len(reports), reports)
	}
	for i := 1; i < len(reports); i++ {
		if reports[i] <= reports[i-1] {
			t.Fatalf("reports %v do not grow", reports)
		}
	}
	c.Thaw(at(40_200)) // the job ends while frozen
	tot, ok := c.Due(at(40_200), 5*time.Second, true)
	if want := 19*1500*time.Millisecond + 1700*time.Millisecond; !ok || tot != want {
		t.Fatalf("final report %v %v, want %v", tot, ok, want)
	}
	if _, ok := c.Due(at(50_000), 5*time.Second, true); ok {
		t.Fatal("a total reported twice")
	}
}

func TestFrozenClockCases(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	s := time.Second
	for _, tc := range []struct {
		name  string
		steps func(c *FrozenClock)
		at    time.Duration
		total time.Duration
		due   bool // with every = 5 s, not final, at t0+at
	}{
		{"never frozen", func(c *FrozenClock) {}, 10 * s, 0, false},
		{"thaw without freeze", func(c *FrozenClock) { c.Thaw(t0.Add(s)) }, 10 * s, 0, false},
		{"open interval counts to now, not reported", func(c *FrozenClock) { c.Freeze(t0) }, 10 * s, 10 * s, false},
		{"closed interval reported", func(c *FrozenClock) { c.Freeze(t0); c.Thaw(t0.Add(3 * s)) }, 10 * s, 3 * s, true},
		{"too soon after a report", func(c *FrozenClock) {
			c.Freeze(t0)
			c.Thaw(t0.Add(s))
			c.Due(t0.Add(s), 5*s, false)
			c.Freeze(t0.Add(2 * s))
			c.Thaw(t0.Add(3 * s))
		}, 4 * s, 2 * s, false},
		{"clock going back counts nothing", func(c *FrozenClock) { c.Freeze(t0.Add(5 * s)); c.Thaw(t0.Add(4 * s)) }, 10 * s, 0, false},
	} {
		var c FrozenClock
		tc.steps(&c)
		if got := c.Total(t0.Add(tc.at)); got != tc.total {
			t.Errorf("%s: total %v, want %v", tc.name, got, tc.total)
		}
		if _, due := c.Due(t0.Add(tc.at), 5*s, false); due != tc.due {
			t.Errorf("%s: due %v, want %v", tc.name, due, tc.due)
		}
	}
}
