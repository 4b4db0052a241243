package flood

import (
	"container/list"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// seenState is what a peer remembers of one job's flood.
type seenState struct {
	maxSeen int // largest TTL received; 0: never seen
	maxFwd  int // largest TTL passed on; 0: never forwarded
}

// verdict is what to do with one advert.
type verdict struct {
	deliver bool      // hand it to the local worker
	forward int       // TTL to pass on to the neighbours; 0: do not forward
	next    seenState // the state to remember
}

// decide is the flood rule. An advert arriving with TTL ttl is delivered
// locally when it is new or carries a larger TTL than any seen for its job,
// and forwarded with ttl-1 only when ttl-1 > 0 and larger than any TTL
// already forwarded for the job. A submitter's own flood of radius r enters
// as ttl r+1, so its neighbours receive r.
//
// Forwarded TTLs grow strictly, so a peer forwards one job at most once per
// distinct TTL it sees, and never more than MaxTTL times: no storms.
func decide(s seenState, ttl int) verdict {
	v := verdict{next: s}
	if ttl > s.maxSeen {
		v.deliver = true
		v.next.maxSeen = ttl
	}
	if out := ttl - 1; out > 0 && out > s.maxFwd {
		v.forward = out
		v.next.maxFwd = out
	}
	return v
}

// seenKey names a job's flood. The submitter is part of it so that nobody
// can shadow another submitter's job by reusing its ID.
type seenKey struct {
	submitter peer.ID
	job       string
}

// seenCache remembers the flood state of recent jobs: at most size entries,
// each forgotten ttl after it was last updated. Not safe for concurrent use:
// the Flooder's run loop owns it.
type seenCache struct {
	size    int
	ttl     time.Duration
	order   *list.List // of *seenEntry, most recently updated first
	entries map[seenKey]*list.Element
}

type seenEntry struct {
	key     seenKey
	state   seenState
	expires time.Time
}

func newSeenCache(size int, ttl time.Duration) *seenCache {
	return &seenCache{size: size, ttl: ttl, order: list.New(), entries: map[seenKey]*list.Element{}}
}

// get returns the state of k at now; a forgotten job has the zero state.
func (c *seenCache) get(k seenKey, now time.Time) seenState {
	el, ok := c.entries[k]
	if !ok {
		return seenState{}
	}
	e := el.Value.(*seenEntry)
	if !now.Before(e.expires) {
		return seenState{}
	}
	return e.state
}

// put records s for k at now, then forgets expired entries and, beyond size,
// the least recently updated ones.
func (c *seenCache) put(k seenKey, s seenState, now time.Time) {
	e := &seenEntry{key: k, state: s, expires: now.Add(c.ttl)}
	if el, ok := c.entries[k]; ok {
		el.Value = e
		c.order.MoveToFront(el)
	} else {
		c.entries[k] = c.order.PushFront(e)
	}
	for back := c.order.Back(); back != nil; back = c.order.Back() {
		old := back.Value.(*seenEntry)
		if c.order.Len() <= c.size && now.Before(old.expires) {
			break
		}
		c.order.Remove(back)
		delete(c.entries, old.key)
	}
}

// len is the number of entries held, expired or not.
func (c *seenCache) len() int { return c.order.Len() }
