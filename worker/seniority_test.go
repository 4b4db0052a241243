package worker

import (
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

func TestPrecedes(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		a, b Seniority
		want bool
	}{
		{"earlier submission first", Seniority{t0, "zz"}, Seniority{t0.Add(time.Millisecond), "aa"}, true},
		{"later submission after", Seniority{t0.Add(time.Second), "aa"}, Seniority{t0, "zz"}, false},
		{"same time: smaller ID first", Seniority{t0, "aa"}, Seniority{t0, "bb"}, true},
		{"same time: larger ID after", Seniority{t0, "bb"}, Seniority{t0, "aa"}, false},
		{"a job does not precede itself", Seniority{t0, "aa"}, Seniority{t0, "aa"}, false},
		{"zero time (an advert without one) first", Seniority{time.Time{}, "zz"}, Seniority{t0, "aa"}, true},
		{"same instant in two zones", Seniority{t0.In(time.FixedZone("x", 3600)), "aa"}, Seniority{t0, "bb"}, true},
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

func TestHeldMemory(t *testing.T) {
	cases := []struct {
		min, per int64
		slots    int
		want     int64
	}{
		{0, 0, 4, 0},
		{1 << 30, 0, 4, 1 << 30},
		{0, 100, 4, 400},
		{1000, 100, 4, 1000},                 // the per-host floor is more
		{0, proto.MaxSize, 2, proto.MaxSize}, // no overflow
		{0, proto.MaxSize / 2, 3, proto.MaxSize},
	}
	for _, c := range cases {
		n := proto.Need{MemPerProc: c.per, Req: proto.Requirements{MinMemory: c.min}}
		if got := HeldMemory(n, c.slots); got != c.want {
			t.Errorf("HeldMemory(min %d, per %d, %d slots) = %d, want %d", c.min, c.per, c.slots, got, c.want)
		}
	}
}
