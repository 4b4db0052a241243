package flood

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       seenState
		ttl     int
		deliver bool
		forward int
	}{
		{"new job, room to go", seenState{}, 3, true, 2},
		{"new job, last hop", seenState{}, 1, true, 0},
		{"submitter's radius 1 (enters as 2)", seenState{}, 2, true, 1},
		{"same TTL again: echo", seenState{3, 2}, 3, false, 0},
		{"smaller TTL by a longer path", seenState{3, 2}, 2, false, 0},
		{"larger radius flooded later", seenState{3, 2}, 5, true, 4},
		{"last hop again", seenState{1, 0}, 1, false, 0},
		{"one larger: forward ttl-1", seenState{1, 0}, 2, true, 1},
		{"seen larger but never forwarded more", seenState{4, 1}, 3, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := decide(tc.s, tc.ttl)
			if v.deliver != tc.deliver || v.forward != tc.forward {
				t.Fatalf("decide(%+v, %d) = deliver %v forward %d, want %v %d",
					tc.s, tc.ttl, v.deliver, v.forward, tc.deliver, tc.forward)
			}
			if v.next.maxSeen < tc.s.maxSeen || v.next.maxFwd < tc.s.maxFwd {
				t.Fatalf("state went back: %+v -> %+v", tc.s, v.next)
			}
		})
	}
}

// Property: whatever order TTLs arrive in, forwards carry strictly larger
// TTLs, so one job is forwarded at most once per distinct TTL seen.
func TestDecideNoStorm(t *testing.T) {
	seqs := [][]int{{1, 2, 3, 4}, {4, 3, 2, 1}, {2, 2, 2}, {3, 1, 5, 5, 2, 6, 6, 4}, {10, 9, 10, 11, 1}}
	for _, seq := range seqs {
		var s seenState
		last, forwards, distinct := 0, 0, map[int]bool{}
		for _, ttl := range seq {
			distinct[ttl] = true
			v := decide(s, ttl)
			s = v.next
			if v.forward == 0 {
				continue
			}
			forwards++
			if v.forward <= last || v.forward != ttl-1 {
				t.Fatalf("%v: forward %d after %d", seq, v.forward, last)
			}
			last = v.forward
		}
		if forwards > len(distinct) {
			t.Fatalf("%v: %d forwards for %d distinct TTLs", seq, forwards, len(distinct))
		}
	}
}

func TestSeenCacheLRUAndExpiry(t *testing.T) {
	t0 := time.Unix(1000, 0)
	key := func(i int) seenKey { return seenKey{submitter: peer.ID("p"), job: fmt.Sprint(i)} }
	c := newSeenCache(3, time.Minute)
	for i := range 3 {
		c.put(key(i), seenState{maxSeen: i + 1}, t0)
	}
	c.put(key(0), seenState{maxSeen: 9}, t0) // 0 is now the most recent
	c.put(key(3), seenState{maxSeen: 4}, t0) // evicts 1, the least recent
	if got := c.get(key(1), t0); got != (seenState{}) {
		t.Fatalf("evicted entry still there: %+v", got)
	}
	if got := c.get(key(0), t0); got.maxSeen != 9 {
		t.Fatalf("refreshed entry: got %+v", got)
	}
	if c.len() != 3 {
		t.Fatalf("len %d, want 3", c.len())
	}
	if got := c.get(key(3), t0.Add(time.Minute)); got != (seenState{}) {
		t.Fatalf("expired entry still read: %+v", got)
	}
	c.put(key(4), seenState{maxSeen: 1}, t0.Add(2*time.Minute))
	if c.len() != 1 {
		t.Fatalf("expired entries not pruned: len %d", c.len())
	}
	// Submitters do not share a job ID's state.
	other := seenKey{submitter: peer.ID("q"), job: "4"}
	if got := c.get(other, t0.Add(2*time.Minute)); got != (seenState{}) {
		t.Fatalf("another submitter's job shares state: %+v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	if err := testConfig().validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	for name, mut := range map[string]func(*Config){
		"ttl 0":               func(c *Config) { c.MaxTTL = 0 },
		"ttl over hard cap":   func(c *Config) { c.MaxTTL = HardMaxTTL + 1 },
		"tiny advert":         func(c *Config) { c.MaxAdvertSize = 10 },
		"no seen":             func(c *Config) { c.SeenSize = 0 },
		"seen shorter":        func(c *Config) { c.SeenTTL = c.MaxLifetime - 1 },
		"lifetime over max":   func(c *Config) { c.AdvertLifetime = c.MaxLifetime + 1 },
		"no rate":             func(c *Config) { c.Rate = 0 },
		"no burst":            func(c *Config) { c.Burst = 0 },
		"no timeout":          func(c *Config) { c.StreamTimeout = 0 },
		"no senders":          func(c *Config) { c.Senders = 0 },
		"no deliver queue":    func(c *Config) { c.DeliverQueue = 0 },
		"negative send queue": func(c *Config) { c.SendQueue = -1 },
	} {
		c := DefaultConfig()
		mut(&c)
		if err := c.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestReasonOf(t *testing.T) {
	for err, want := range map[error]DropReason{
		fmt.Errorf("x: %w", ErrBadSignature): DropBadSignature,
		fmt.Errorf("x: %w", ErrOversized):    DropOversized,
		fmt.Errorf("x: %w", ErrTTLOverCap):   DropTTLOverCap,
		fmt.Errorf("x: %w", ErrExpired):      DropExpired,
		errRateLimited:                       DropRateLimited,
		fmt.Errorf("x: %w", ErrGarbage):      DropGarbage,
		errors.New("anything else"):          DropGarbage,
	} {
		if got := reasonOf(err); got != want {
			t.Errorf("reasonOf(%v) = %s, want %s", err, got, want)
		}
	}
}
