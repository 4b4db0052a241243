package shm

import (
	"testing"
	"time"
)

// TestNextSpan: quick yields stretch the span by doubling, from spanStep
// up to spanMax; one slow yield brings it back to 0 (yield at every check).
func TestNextSpan(t *testing.T) {
	const us = time.Microsecond
	for _, c := range []struct {
		name       string
		span, took time.Duration
		want       time.Duration
	}{
		{"quick from every check", 0, 1 * us, spanStep},
		{"quick doubles", 1 * us, 2 * us, 2 * us},
		{"quick doubles again", 2 * us, 1 * us, 4 * us},
		{"quick stops at the bound", 5 * us, 1 * us, spanMax},
		{"quick at the bound", spanMax, 1 * us, spanMax},
		{"just under the threshold is quick", 2 * us, quickYield - 1, 4 * us},
		{"at the threshold: another thread ran", 2 * us, quickYield, 0},
		{"the peer ran and came back", spanMax, 7 * us, 0},
		{"a whole slice", spanMax, 3 * time.Millisecond, 0},
		{"slow stays at every check", 0, 10 * us, 0},
		{"a zero yield is quick", 0, 0, spanStep},
	} {
		if got := nextSpan(c.span, c.took); got != c.want {
			t.Errorf("%s: nextSpan(%v, %v) = %v, want %v", c.name, c.span, c.took, got, c.want)
		}
	}
	if spanMax >= Poll || spanStep > spanMax || quickYield <= 0 {
		t.Errorf("span bounds %v..%v must lie below the poll's %v", spanStep, spanMax, Poll)
	}
}
