package overlay

import "math/rand/v2"

// The neighbour exchange's decisions, as plain functions over values: whom
// an agent asks, what a responder answers, and which known peer a full
// table forgets for one it learns. The Overlay calls them on its peers;
// the simulation (testnet/sim) calls them on simulated agents, so both
// gossip by the same rules. P is whatever names a peer (peer.ID here, an
// index in the simulation).

// ExchangeTarget is whom an agent asks in its next exchange round. While
// it has outbound neighbours it asks them in turn, and the request renews
// its lease with that neighbour (neighbour is true): turn counts the
// rounds that had neighbours, and ExchangeTarget advances it. Without
// neighbours it asks a live peer it knows, drawn with rng, so a young
// agent learns peers from anyone it reached. ok is false when it knows no
// live peer.
func ExchangeTarget[P any](outbound, live []P, turn *int, rng *rand.Rand) (target P, neighbour, ok bool) {
	if len(outbound) > 0 {
		*turn++
		return outbound[*turn%len(outbound)], true, true
	}
	if len(live) == 0 {
		return target, false, false
	}
	return live[rng.IntN(len(live))], false, true
}

// ExchangeAnswer is what a responder tells the requester to: its outbound
// neighbours in their order (nearest first), then extraRecords of others,
// its other live measured peers, drawn at random with rng; to itself is
// left out (also when drawn, which leaves one fewer), and the answer holds
// at most maxRecords peers. The neighbours of a near peer are likely near
// too, so locality spreads without measuring everyone; the random others
// bring peers that no neighbour would. ExchangeAnswer reorders others.
func ExchangeAnswer[P comparable](outbound, others []P, to P, rng *rand.Rand) []P {
	out := make([]P, 0, min(len(outbound)+min(len(others), extraRecords), maxRecords))
	add := func(p P) {
		if p != to && len(out) < maxRecords {
			out = append(out, p)
		}
	}
	for _, p := range outbound {
		add(p)
	}
	// Draw without replacement (partial Fisher-Yates).
	for i := range min(len(others), extraRecords) {
		j := i + rng.IntN(len(others)-i)
		others[i], others[j] = others[j], others[i]
		add(others[i])
	}
	return out
}

// Evict chooses the known peer a full table forgets to make room for one
// it learns, and returns its index in peers, or -1 when none may go (the
// newcomer is then not learned): the first dead peer, else the measured
// peer farthest by RTT that is no neighbour (the first of peers at that
// RTT). Neighbours, either way, and peers not measured yet stay: a new
// peer keeps its place until it has been measured. The caller leaves out
// peers it must keep for its own reasons (one being probed).
func Evict(peers []PeerInfo) int {
	victim := -1
	for i, p := range peers {
		switch {
		case p.Dead:
			return i
		case p.Neighbour || !p.Measured:
		case victim < 0 || p.RTT > peers[victim].RTT:
			victim = i
		}
	}
	return victim
}
