package flood

import "testing"

// TestRuleIsDecide: the exported rule is the flooder's own, on every
// state and TTL up to the hard bound.
func TestRuleIsDecide(t *testing.T) {
	for seen := 0; seen <= HardMaxTTL; seen++ {
		for fwd := 0; fwd <= HardMaxTTL; fwd++ {
			for ttl := 1; ttl <= HardMaxTTL+1; ttl++ {
				v := decide(seenState{maxSeen: seen, maxFwd: fwd}, ttl)
				deliver, forward, nextSeen, nextFwd := Rule(seen, fwd, ttl)
				if deliver != v.deliver || forward != v.forward || nextSeen != v.next.maxSeen || nextFwd != v.next.maxFwd {
					t.Fatalf("Rule(%d, %d, %d) = %v %d %d %d, decide says %+v", seen, fwd, ttl, deliver, forward, nextSeen, nextFwd, v)
				}
			}
		}
	}
}
