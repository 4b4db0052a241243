package flood

import (
	"errors"
	"sync/atomic"
)

// DropReason says why an advert was dropped.
type DropReason string

// Reasons for dropping an advert. Each drop is counted under one of them.
const (
	DropBadSignature DropReason = "bad-signature" // unsigned, invalid signature, or signer is not the Submitter
	DropOversized    DropReason = "oversized"     // frame larger than MaxAdvertSize
	DropTTLOverCap   DropReason = "ttl-over-cap"  // TTL larger than MaxTTL
	DropGarbage      DropReason = "garbage"       // not a well-formed advert: framing, JSON, fields, truncated or timed out
	DropRateLimited  DropReason = "rate-limited"  // the sending peer is over its rate
	DropExpired      DropReason = "expired"       // past its signed expiry
	DropQueueFull    DropReason = "queue-full"    // local overload: the send or delivery queue was full
)

// dropReasons numbers the reasons for the counters' array.
var dropReasons = [...]DropReason{
	DropBadSignature, DropOversized, DropTTLOverCap, DropGarbage, DropRateLimited, DropExpired, DropQueueFull,
}

// errRateLimited marks an inbound stream refused by the rate limiter.
var errRateLimited = errors.New("flood: rate limited")

// reasonOf maps a receive error to the reason it is counted under.
func reasonOf(err error) DropReason {
	for _, r := range []struct {
		err    error
		reason DropReason
	}{
		{ErrBadSignature, DropBadSignature}, {ErrOversized, DropOversized},
		{ErrTTLOverCap, DropTTLOverCap}, {ErrExpired, DropExpired}, {errRateLimited, DropRateLimited},
	} {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return DropGarbage
}

// Stats are a Flooder's counters since it started.
type Stats struct {
	Received   uint64 // valid adverts read from other peers
	Originated uint64 // adverts this peer signed and flooded (Flood calls)
	Direct     uint64 // adverts this peer sent to a peer directly (Direct), counted in Sent too once written
	Forwarded  uint64 // times this peer passed a received advert on to its neighbours
	Sent       uint64 // advert messages written to a neighbour, originated or forwarded
	SendErrors uint64 // advert messages that could not be written
	Delivered  uint64 // adverts handed to the local DeliverFunc
	Stale      uint64 // valid adverts neither new nor with a larger TTL: de-duplicated
	Dropped    map[DropReason]uint64
}

// TotalDropped sums Dropped over all reasons.
func (s Stats) TotalDropped() uint64 {
	var n uint64
	for _, v := range s.Dropped {
		n += v
	}
	return n
}

// counters are updated from several goroutines, hence atomics.
type counters struct {
	received, originated, direct, forwarded, sent, sendErrors, delivered, stale atomic.Uint64
	dropped                                                                     [len(dropReasons)]atomic.Uint64
}

func (c *counters) drop(r DropReason) {
	for i, x := range dropReasons {
		if x == r {
			c.dropped[i].Add(1)
			return
		}
	}
}

func (c *counters) snapshot() Stats {
	s := Stats{
		Received: c.received.Load(), Originated: c.originated.Load(), Direct: c.direct.Load(), Forwarded: c.forwarded.Load(),
		Sent: c.sent.Load(), SendErrors: c.sendErrors.Load(), Delivered: c.delivered.Load(),
		Stale: c.stale.Load(), Dropped: map[DropReason]uint64{},
	}
	for i, r := range dropReasons {
		if n := c.dropped[i].Load(); n > 0 {
			s.Dropped[r] = n
		}
	}
	return s
}
