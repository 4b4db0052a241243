package job

import (
	"testing"
	"time"
)

func TestPrecedes(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		a, b Priority
		want bool
	}{
		{"earlier submission first", Priority{t0, "zz"}, Priority{t0.Add(time.Millisecond), "aa"}, true},
		{"later submission after", Priority{t0.Add(time.Second), "aa"}, Priority{t0, "zz"}, false},
		{"same time: smaller ID first", Priority{t0, "aa"}, Priority{t0, "bb"}, true},
		{"same time: larger ID after", Priority{t0, "bb"}, Priority{t0, "aa"}, false},
		{"a job does not precede itself", Priority{t0, "aa"}, Priority{t0, "aa"}, false},
		{"zero time (an advert without one) first", Priority{time.Time{}, "zz"}, Priority{t0, "aa"}, true},
		{"same instant in two zones", Priority{t0.In(time.FixedZone("x", 3600)), "aa"}, Priority{t0, "bb"}, true},
	}
	for _, c := range cases {
		if got := Precedes(c.a, c.b); got != c.want {
			t.Errorf("%s: Precedes = %v, want %v", c.name, got, c.want)
		}
		// Exactly one of two distinct jobs goes first.
		if c.a != c.b && c.a.Job != c.b.Job && Precedes(c.a, c.b) == Precedes(c.b, c.a) {
			t.Errorf("%s: not antisymmetric", c.name)
		}
	}
}

func TestShouldYield(t *testing.T) {
	for _, c := range []struct {
		feasible, want bool
	}{{false, true}, {true, false}} {
		if got := ShouldYield(c.feasible); got != c.want {
			t.Errorf("ShouldYield(feasible=%v) = %v, want %v", c.feasible, got, c.want)
		}
	}
}
