package main

import "github.com/zorilla-p2p/zorilla/examples/internal/npb"

// generateKeys fills keys with the keys of global indices [first,
// first+len(keys)) of IS's sequence: key i is maxKey/4 times the sum of the
// generator's numbers 4i..4i+3, truncated, so keys are roughly Gaussian
// over [0, maxKey). Each rank generates its own stretch by jumping the
// seed ahead, as NPB's find_my_seed does, and the keys do not depend on the
// number of ranks.
func generateKeys(keys []int32, first int64, maxKey int32) {
	s := npb.Skip(seed, npb.A, 4*first)
	k := float64(maxKey / 4)
	var x [4]float64
	for i := range keys {
		npb.Vranlc(4, &s, npb.A, x[:])
		keys[i] = int32(k * (x[0] + x[1] + x[2] + x[3]))
	}
}
