package overlay

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// The rendezvous' decisions are plain functions of what an agent knows:
// when to look its network's key up next, and whether to announce itself
// under it. Rendezvous applies them with a clock and a public DHT; the
// rendezvous model (testnet/cmd/rdvmodel) runs them for networks of up to
// 100,000 agents.

// maxBoost bounds how much an agent raises its chance to provide when it
// finds fewer base providers than the target: enough when one agent in
// eight can be dialled, and a bound on the records if the count is wrong.
const maxBoost = 8

// LookupState is what an agent knows when it decides when to look its
// network's key up next.
type LookupState struct {
	// Known is how many peers the overlay knows, dead ones included; Live
	// is how many of them are not dead.
	Known, Live int
	// Want is how many neighbours the overlay picks (K + Random).
	Want int
	// Estimate is the network's size as the agent estimates it, itself
	// included (Overlay.Estimate).
	Estimate int
	// Last is when the last try ended; zero: there was none.
	Last time.Time
	// Attempts counts the lookups in a row that left the agent hungry and
	// found no agent it had not found before.
	Attempts int
	// Failures counts the tries in a row that could not look up at all (no
	// public DHT peer answered).
	Failures int
	// Providing is whether the agent announces itself: it then looks up at
	// least every Provide, so that it renews its record on a fresh count of
	// the others (ShouldProvide).
	Providing bool
}

// Hungry reports whether a lookup would help: the agent knows fewer live
// peers than the neighbours it wants, as many as the network seems to have
// (a network of three agents gives each two). An agent that knows enough
// live peers refills its neighbour set from them, whatever happens to its
// neighbours; one that knows none is cut off.
func (s LookupState) Hungry() bool {
	want := min(s.Want, max(s.Known, s.Estimate-1))
	return s.Live == 0 || s.Live < want
}

// Observe returns s with what the overlay knows now. An agent that is not
// hungry forgets its hungry backoff: cut off later, it looks up again
// within Backoff, however long it once looked in vain.
func (s LookupState) Observe(known, live, want, estimate int) LookupState {
	s.Known, s.Live, s.Want, s.Estimate = known, live, want, estimate
	if !s.Hungry() {
		s.Attempts = 0
	}
	return s
}

// NextLookup is when the agent looks its network's key up next; u in
// [0, 1) spreads the wait by ±25%, so that agents started together do not
// look up together. The first lookup is at once (the zero time). After a
// try that reached no public DHT peer the wait is Backoff, doubling up to
// MaxBackoff; while the agent is hungry it is Backoff, doubling with each
// lookup that found no new agent, up to the heal period; once it is not
// hungry it is the heal period (at most Provide for an agent that
// announces itself).
func (c RendezvousConfig) NextLookup(s LookupState, u float64) time.Time {
	if s.Last.IsZero() {
		return time.Time{}
	}
	heal := c.HealPeriod(s.Estimate)
	if s.Providing {
		heal = min(heal, c.Provide)
	}
	var wait time.Duration
	switch {
	case s.Failures > 0:
		wait = doubled(c.Backoff, s.Failures-1, c.MaxBackoff)
	case s.Hungry():
		wait = doubled(c.Backoff, s.Attempts, heal)
	default:
		wait = heal
	}
	return s.Last.Add(spread(wait, u))
}

// HealPeriod is how long an agent that is not hungry waits between
// lookups: Heal, or longer in a network so large that the lookups of all
// its agents would exceed HealRate per second.
func (c RendezvousConfig) HealPeriod(estimate int) time.Duration {
	share := time.Duration(float64(max(estimate, 1)) / c.HealRate * float64(time.Second))
	return max(c.Heal, share)
}

// ProvideState is what an agent knows when it decides whether to announce
// itself under its network's key.
type ProvideState struct {
	// Dialable is whether an agent that finds this one can reach it: it is
	// not known to be behind a NAT, or it holds a relay slot.
	Dialable bool
	// Draw is the agent's ProviderDraw.
	Draw float64
	// Estimate is the network's size as the agent estimates it; Settled
	// whether the estimate comes from the overlay's DHT rather than only
	// from the peers the agent knows (Overlay.Estimate).
	Estimate int
	Settled  bool
	// Looked is whether a lookup has ended. Found is how many agents the
	// last one found, and FoundBase how many of those it reached that are
	// base providers (IsBase).
	Looked           bool
	Found, FoundBase int
}

// ShouldProvide decides whether the agent announces itself. Only a
// dialable agent does, and only after a lookup: at once when the lookup
// found fewer than half of Providers (a young or small network needs every
// dialable agent), else once its size estimate has settled, if its draw
// falls below its share. The share is Providers/Estimate (the base
// providers), raised by Providers/FoundBase, at most maxBoost times, when
// the lookup reached fewer base providers than Providers: base providers
// are a fixed sample of the dialable agents that every agent can
// recognise, so counting them measures how many agents can be dialled and
// are alive, and the raise brings the expected providers back near
// Providers without feeding on itself.
func (c RendezvousConfig) ShouldProvide(s ProvideState) bool {
	switch {
	case !s.Dialable || !s.Looked:
		return false
	case s.Found < (c.Providers+1)/2:
		return true
	case !s.Settled:
		return false
	}
	boost := min(maxBoost, max(1, float64(c.Providers)/float64(max(s.FoundBase, 1))))
	return s.Draw < c.BaseShare(s.Estimate)*boost
}

// BaseShare is the share of dialable agents that provide whatever they
// find: Providers/estimate, at most 1.
func (c RendezvousConfig) BaseShare(estimate int) float64 {
	return min(1, float64(c.Providers)/float64(max(estimate, 1)))
}

// IsBase reports whether an agent whose draw is draw is a base provider
// for a network estimated at estimate agents.
func (c RendezvousConfig) IsBase(draw float64, estimate int) bool {
	return draw < c.BaseShare(estimate)
}

// ProviderDraw is an agent's fixed place in [0, 1) for deciding whether it
// provides: a hash of its network and peer ID, so the same agents provide
// as long as the estimate holds (records are not churned), and any agent
// can tell another's draw from its ID.
func ProviderDraw(network string, id peer.ID) float64 {
	sum := sha256.Sum256([]byte("zorilla provider draw " + network + " " + string(id)))
	return float64(binary.BigEndian.Uint64(sum[:8])>>11) / (1 << 53)
}

// doubled is base doubled n times, at most limit.
func doubled(base time.Duration, n int, limit time.Duration) time.Duration {
	for ; n > 0 && base < limit; n-- {
		base *= 2
	}
	return min(base, limit)
}

// spread scales d by 0.75 + u/2, u in [0, 1).
func spread(d time.Duration, u float64) time.Duration {
	return time.Duration(float64(d) * (0.75 + u/2))
}
