package ratelimit

import (
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Limit is a token bucket's shape: Rate tokens per second refill it up to
// Burst; each request takes one.
type Limit struct {
	Rate  float64
	Burst int
}

// Validate checks that the limit lets something through.
func (l Limit) Validate() error {
	if l.Rate <= 0 || l.Burst < 1 {
		return fmt.Errorf("ratelimit: rate %v and burst %d must be positive", l.Rate, l.Burst)
	}
	return nil
}

// DefaultMaxPeers bounds the peers a table tracks at once. A peer needs a
// connection to send, and libp2p's resource manager caps those far lower,
// so this is only a backstop: 4096 buckets are about 200 KiB.
const DefaultMaxPeers = 4096

// bucket is a token bucket at the time it was last used.
type bucket struct {
	tokens float64
	last   time.Time
}

// take refills the bucket up to now and takes one token if there is one.
func (b *bucket) take(now time.Time, l Limit) bool {
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(float64(l.Burst), b.tokens+dt*l.Rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// full reports whether the bucket would be back to Burst at now, that is
// whether forgetting it changes nothing.
func (b *bucket) full(now time.Time, l Limit) bool {
	return b.tokens+now.Sub(b.last).Seconds()*l.Rate >= float64(l.Burst)
}

// Peers rate-limits requests per remote peer. Stream handlers call Allow
// concurrently: mu guards the buckets and is held only for the map and the
// arithmetic, never across I/O.
type Peers struct {
	lim Limit
	max int

	mu      sync.Mutex
	buckets map[peer.ID]*bucket
}

// NewPeers returns a table limiting each peer to lim, tracking at most
// maxPeers peers (0: DefaultMaxPeers).
func NewPeers(lim Limit, maxPeers int) (*Peers, error) {
	if err := lim.Validate(); err != nil {
		return nil, err
	}
	if maxPeers < 0 {
		return nil, fmt.Errorf("ratelimit: maxPeers %d must not be negative", maxPeers)
	}
	if maxPeers == 0 {
		maxPeers = DefaultMaxPeers
	}
	return &Peers{lim: lim, max: maxPeers, buckets: map[peer.ID]*bucket{}}, nil
}

// MustPeers is NewPeers for limits fixed in code.
func MustPeers(lim Limit, maxPeers int) *Peers {
	p, err := NewPeers(lim, maxPeers)
	if err != nil {
		panic(err)
	}
	return p
}

// Allow takes one token from p's bucket at now; false means refuse.
func (t *Peers) Allow(p peer.ID, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.buckets[p]
	if !ok {
		t.makeRoom(now)
		b = &bucket{tokens: float64(t.lim.Burst), last: now}
		t.buckets[p] = b
	}
	return b.take(now, t.lim)
}

// Len is the number of peers tracked.
func (t *Peers) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.buckets)
}

// makeRoom forgets full buckets when the map is at its bound, and arbitrary
// ones if none is full. Called with mu held. A forgotten peer starts again
// with a full bucket: with the bound above what libp2p lets connect, only
// peers idle long enough to be full are forgotten in practice.
func (t *Peers) makeRoom(now time.Time) {
	if len(t.buckets) < t.max {
		return
	}
	for p, b := range t.buckets {
		if b.full(now, t.lim) {
			delete(t.buckets, p)
		}
	}
	for p := range t.buckets {
		if len(t.buckets) < t.max {
			break
		}
		delete(t.buckets, p)
	}
}
