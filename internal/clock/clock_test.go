package clock

import (
	"testing"
	"time"
)

// TestJumpAdvance: a jump ends the waits it passes, and only those.
func TestJumpAdvance(t *testing.T) {
	var c Jump
	start := c.Now()
	soon, late := c.After(time.Minute), c.After(time.Hour)
	if c.Waiting() != 2 {
		t.Fatalf("%d waiting, want 2", c.Waiting())
	}
	c.Advance(2 * time.Minute)
	select {
	case at := <-soon:
		if at.Sub(start) < 2*time.Minute {
			t.Errorf("fired at %v after the start, want the jumped time", at.Sub(start))
		}
	default:
		t.Fatal("a wait of a minute did not end after a jump of two")
	}
	select {
	case <-late:
		t.Fatal("a wait of an hour ended after a jump of two minutes")
	default:
	}
	if c.Waiting() != 1 {
		t.Errorf("%d waiting, want 1", c.Waiting())
	}
	if now := c.Now(); now.Sub(start) < 2*time.Minute {
		t.Errorf("now is %v after the start, want at least the jump", now.Sub(start))
	}
	c.Advance(time.Hour)
	<-late
	if c.Waiting() != 0 {
		t.Errorf("%d waiting, want none", c.Waiting())
	}
}

// TestJumpRealTime: without a jump, a wait ends when real time reaches it,
// once.
func TestJumpRealTime(t *testing.T) {
	var c Jump
	w := c.After(time.Millisecond)
	<-w
	c.Advance(time.Hour) // the wait is gone: nothing fires twice
	select {
	case <-w:
		t.Fatal("a wait fired twice")
	default:
	}
	if c.Waiting() != 0 {
		t.Errorf("%d waiting, want none", c.Waiting())
	}
}

func TestSystem(t *testing.T) {
	var c System
	if d := time.Since(c.Now()); d < 0 || d > time.Minute {
		t.Errorf("system clock off by %v", d)
	}
	<-c.After(time.Millisecond)
}
