package job

import (
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/flood"
)

func TestRadiusClock(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newRadiusClock(flood.Schedule{First: time.Second, Factor: 2}, 100*time.Millisecond, t0)
	// Radii are flooded at 0 s, 1 s, 3 s, 7 s; their offers are in 100 ms later.
	for _, tc := range []struct{ now, want time.Duration }{
		{0, 100 * time.Millisecond},
		{50 * time.Millisecond, 50 * time.Millisecond},
		{100 * time.Millisecond, 1000 * time.Millisecond},
		{2 * time.Second, 1100 * time.Millisecond},
		{3100 * time.Millisecond, 4000 * time.Millisecond},
	} {
		if got := c.next(t0.Add(tc.now)); got != tc.want {
			t.Errorf("at %v: next = %v, want %v", tc.now, got, tc.want)
		}
	}
}
