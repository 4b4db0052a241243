package npb

import (
	"testing"
	"time"
)

func TestTimerAddsLaps(t *testing.T) {
	now := time.Unix(1000, 0)
	tm := Timer{Now: func() time.Time { return now }}
	step := func(d time.Duration) { now = now.Add(d) }

	tm.Start()
	step(2 * time.Second)
	tm.Stop()
	step(time.Hour) // stopped: not counted
	tm.Stop()       // a second Stop changes nothing
	tm.Start()
	step(500 * time.Millisecond)
	if got := tm.Seconds(); got != 2.5 {
		t.Fatalf("running read = %v, want 2.5", got)
	}
	tm.Stop()
	if got := tm.Seconds(); got != 2.5 {
		t.Fatalf("read = %v, want 2.5", got)
	}
	tm.Clear()
	if got := tm.Seconds(); got != 0 {
		t.Fatalf("cleared read = %v", got)
	}
}
