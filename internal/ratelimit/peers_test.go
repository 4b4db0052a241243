package ratelimit

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

func TestBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := Limit{Rate: 1, Burst: 2}
	b := bucket{tokens: 2, last: t0}
	got := []bool{b.take(t0, l), b.take(t0, l), b.take(t0, l),
		b.take(t0.Add(500*time.Millisecond), l), b.take(t0.Add(time.Second), l),
		b.take(t0.Add(time.Hour), l), b.take(t0.Add(time.Hour), l), b.take(t0.Add(time.Hour), l)}
	want := []bool{true, true, false, false, true, true, true, false}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("takes %v, want %v (refill 1/s, burst 2, capped)", got, want)
	}
}

func TestPeersPerPeerAndBounded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := MustPeers(Limit{Rate: 1, Burst: 1}, 100)
	if !l.Allow("a", t0) || l.Allow("a", t0) {
		t.Fatal("a: want one allowed, then refused")
	}
	if !l.Allow("b", t0) {
		t.Fatal("b is limited by a's bucket")
	}
	for i := range 1000 {
		l.Allow(peer.ID(fmt.Sprint("x", i)), t0)
		if n := l.Len(); n > 100 {
			t.Fatalf("table holds %d buckets, bound 100", n)
		}
	}
}

// TestPeersForgetsFullFirst: at the bound, a peer whose bucket is still
// draining is kept while idle (full) ones make room.
func TestPeersForgetsFullFirst(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := MustPeers(Limit{Rate: 0.001, Burst: 1}, 3)
	l.Allow("busy", t0.Add(time.Hour)) // empty until far later
	l.mu.Lock()
	l.buckets["idle1"] = &bucket{tokens: 1, last: t0}
	l.buckets["idle2"] = &bucket{tokens: 1, last: t0}
	l.mu.Unlock()
	l.Allow("new", t0.Add(time.Hour))
	if l.Allow("busy", t0.Add(time.Hour)) {
		t.Fatal("the draining bucket was forgotten before the full ones")
	}
}

// TestPeersRate: over 10 simulated seconds at 1000 requests a second a
// peer limited to 20/s burst 50 gets exactly burst + 10 × rate through.
func TestPeersRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := MustPeers(Limit{Rate: 20, Burst: 50}, 0)
	n := 0
	for i := range 10000 {
		if l.Allow("p", t0.Add(time.Duration(i)*time.Millisecond)) {
			n++
		}
	}
	if n < 50+199 || n > 50+200 {
		t.Fatalf("%d allowed in 10 s, want 250 (burst 50 + 20/s)", n)
	}
}

func TestPeersConcurrent(t *testing.T) {
	l := MustPeers(Limit{Rate: 1, Burst: 10}, 8)
	var wg sync.WaitGroup
	now := time.Unix(1000, 0)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				l.Allow(peer.ID(fmt.Sprint(g, i%20)), now)
			}
		}()
	}
	wg.Wait()
	if n := l.Len(); n > 8 {
		t.Fatalf("table holds %d buckets, bound 8", n)
	}
}

func TestNewPeersRejectsBadLimits(t *testing.T) {
	for _, c := range []struct {
		l   Limit
		max int
	}{{Limit{0, 1}, 0}, {Limit{1, 0}, 0}, {Limit{-1, 1}, 0}, {Limit{1, 1}, -1}} {
		if _, err := NewPeers(c.l, c.max); err == nil {
			t.Errorf("NewPeers(%+v, %d) accepted", c.l, c.max)
		}
	}
}

func TestCounts(t *testing.T) {
	var c Counts
	c.Add("a")
	c.Add("a")
	c.Add("b")
	s := c.Snapshot()
	if s["a"] != 2 || s["b"] != 1 || len(s) != 2 {
		t.Fatalf("counts %v", s)
	}
	s["a"] = 99
	if c.Snapshot()["a"] != 2 {
		t.Fatal("snapshot shares the map")
	}
	var nilc *Counts
	nilc.Add("x")
	if len(nilc.Snapshot()) != 0 {
		t.Fatal("nil Counts counted")
	}
}
