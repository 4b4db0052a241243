package overlay

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Candidate is a live, measured peer that may become a neighbour.
type Candidate struct {
	ID  peer.ID
	RTT time.Duration // smoothed round-trip time
	// LongRange says the peer is one of the current random long-range
	// neighbours. Such a peer keeps its place while it stays a candidate,
	// so the long-range links do not change at every selection.
	LongRange bool
}

// SelectNeighbours chooses the neighbour set from measured candidates: the
// k with the lowest RTT (ties broken by peer ID), then up to random others
// as long-range links: current long-range neighbours first, the rest drawn
// uniformly with rng. The result lists the nearest first, in ascending RTT,
// then the long-range ones; it has no duplicates, and with the same inputs
// and rng state it is the same.
//
// The k nearest give locality (floods reach the closest machines first, as
// Zorilla's flood scheduling wants); the random links keep the graph
// connected when the nearest peers of a site are all inside that site.
func SelectNeighbours(cands []Candidate, k, random int, rng *rand.Rand) []peer.ID {
	sorted := dedupe(cands)
	k = min(max(k, 0), len(sorted))
	out := make([]peer.ID, 0, min(len(sorted), k+max(random, 0)))
	for _, c := range sorted[:k] {
		out = append(out, c.ID)
	}
	rest := sorted[k:]
	// Keep current long-range links, in ID order so the choice is stable.
	var kept, pool []Candidate
	for _, c := range rest {
		if c.LongRange {
			kept = append(kept, c)
		} else {
			pool = append(pool, c)
		}
	}
	slices.SortFunc(kept, byID)
	slices.SortFunc(pool, byID)
	for _, c := range kept {
		if len(out) == k+random {
			return out
		}
		out = append(out, c.ID)
	}
	// Draw the others without replacement (partial Fisher-Yates).
	for i := 0; i < len(pool) && len(out) < k+random; i++ {
		j := i + rng.IntN(len(pool)-i)
		pool[i], pool[j] = pool[j], pool[i]
		out = append(out, pool[i].ID)
	}
	return out
}

// dedupe returns the candidates sorted by RTT then ID, each peer once with
// its lowest RTT; a long-range mark on any copy is kept.
func dedupe(cands []Candidate) []Candidate {
	sorted := slices.Clone(cands)
	slices.SortFunc(sorted, byRTT)
	seen := make(map[peer.ID]int, len(sorted))
	out := sorted[:0]
	for _, c := range sorted {
		if i, ok := seen[c.ID]; ok {
			out[i].LongRange = out[i].LongRange || c.LongRange
			continue
		}
		seen[c.ID] = len(out)
		out = append(out, c)
	}
	return out
}

func byRTT(a, b Candidate) int {
	if c := cmp.Compare(a.RTT, b.RTT); c != 0 {
		return c
	}
	return byID(a, b)
}

func byID(a, b Candidate) int { return cmp.Compare(a.ID, b.ID) }
