package flood

import (
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// bucket is a token bucket: it holds up to burst tokens, refilled at rate
// per second; each advert takes one.
type bucket struct {
	tokens float64
	last   time.Time
}

// take refills the bucket up to now and takes one token if there is one.
func (b *bucket) take(now time.Time, rate float64, burst int) bool {
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(float64(burst), b.tokens+dt*rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// full reports whether the bucket would be back to burst at now, that is
// whether forgetting it changes nothing.
func (b *bucket) full(now time.Time, rate float64, burst int) bool {
	return b.tokens+now.Sub(b.last).Seconds()*rate >= float64(burst)
}

// maxLimited bounds the peers the limiter tracks at once. A connection is
// needed to send, and libp2p's resource manager caps those, so this is only
// a backstop.
const maxLimited = 4096

// limiter rate-limits adverts per sending peer. Stream handlers call it
// concurrently: mu guards buckets, and is held only for the map and the
// arithmetic, never across I/O.
type limiter struct {
	rate  float64
	burst int

	mu      sync.Mutex
	buckets map[peer.ID]*bucket
}

func newLimiter(rate float64, burst int) *limiter {
	return &limiter{rate: rate, burst: burst, buckets: map[peer.ID]*bucket{}}
}

// allow takes one token from p's bucket at now.
func (l *limiter) allow(p peer.ID, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[p]
	if !ok {
		l.makeRoom(now)
		b = &bucket{tokens: float64(l.burst), last: now}
		l.buckets[p] = b
	}
	return b.take(now, l.rate, l.burst)
}

// makeRoom forgets full buckets when the map is at its bound, and one
// arbitrary bucket if none is full. Called with mu held.
func (l *limiter) makeRoom(now time.Time) {
	if len(l.buckets) < maxLimited {
		return
	}
	for p, b := range l.buckets {
		if b.full(now, l.rate, l.burst) {
			delete(l.buckets, p)
		}
	}
	for p := range l.buckets {
		if len(l.buckets) < maxLimited {
			break
		}
		delete(l.buckets, p)
	}
}
