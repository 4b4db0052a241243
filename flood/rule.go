package flood

// Rule is the flood rule (decide) for callers that model agents without a
// Flooder, such as a simulation of many agents in one loop: given what a
// peer remembers of one job's flood (the largest TTL it received, the
// largest it forwarded; 0: none) and an advert's TTL, it says whether the
// advert goes to the local worker, the TTL it is forwarded with (0: not
// forwarded), and what the peer remembers afterwards. Pure.
func Rule(maxSeen, maxFwd, ttl int) (deliver bool, forward, nextSeen, nextFwd int) {
	v := decide(seenState{maxSeen: maxSeen, maxFwd: maxFwd}, ttl)
	return v.deliver, v.forward, v.next.maxSeen, v.next.maxFwd
}
