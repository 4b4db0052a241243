package peertest

import "testing"

// The IDs are valid, distinct, and the same on every call.
func TestPeersAreStableAndDistinct(t *testing.T) {
	a, b := Peers(t, 5), Peers(t, 5)
	seen := map[string]bool{}
	for i, id := range a {
		if err := id.Validate(); err != nil {
			t.Fatalf("peer %d: %v", i, err)
		}
		if id != b[i] {
			t.Fatalf("peer %d differs between calls: %s, %s", i, id, b[i])
		}
		if seen[string(id)] {
			t.Fatalf("peer %d repeats %s", i, id)
		}
		seen[string(id)] = true
	}
}
