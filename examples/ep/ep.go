package main

import (
	"context"
	"math"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
)

// tally is what EP accumulates: the count of Gaussian pairs whose larger
// coordinate falls in each square annulus l <= max(|X|,|Y|) < l+1, and the
// sums of the X and Y deviates.
type tally struct {
	q      [nq]float64
	sx, sy float64
}

// pairs is the number of Gaussian pairs counted.
func (t tally) pairs() float64 {
	var g float64
	for _, v := range t.q {
		g += v
	}
	return g
}

// vector flattens the tally to q[0..nq-1], sx, sy for one Allreduce.
func (t tally) vector() []float64 {
	v := make([]float64, 0, nq+2)
	v = append(v, t.q[:]...)
	return append(v, t.sx, t.sy)
}

// tallyFrom is the inverse of vector.
func tallyFrom(v []float64) tally {
	var t tally
	copy(t.q[:], v[:nq])
	t.sx, t.sy = v[nq], v[nq+1]
	return t
}

// batchSeed is the generator's seed at the start of batch k: every batch
// consumes 2*nk numbers of one global sequence starting at seed, so batch
// k starts 2*nk*k steps in. NPB finds it the same way, by binary powering.
func batchSeed(k int64) float64 { return npb.Skip(seed, npb.A, 2*nk*k) }

// rankShare computes the tally of the batches that rank holds out of size
// ranks: a contiguous block, the first ranks holding one more batch when
// size does not divide their number, as NPB does. It stops with ctx's error
// between two batches.
func rankShare(ctx context.Context, p params, size, rank int) (tally, error) {
	first, count := npb.Block(p.batches(), size, rank)
	var t tally
	x := make([]float64, 2*nk)
	for k := first; k < first+count; k++ {
		if err := ctx.Err(); err != nil {
			return tally{}, err
		}
		runBatch(k, x, &t)
	}
	return t, nil
}

// runBatch adds to t the Gaussian pairs of batch k, using x (len 2*nk) as
// scratch for its uniform numbers.
func runBatch(k int64, x []float64, t *tally) {
	s := batchSeed(k)
	npb.Vranlc(2*nk, &s, npb.A, x)
	gaussianPairs(x, t)
}

// gaussianPairs turns consecutive uniform numbers of x into pairs in
// (-1, 1)^2 and, by Marsaglia's polar method, keeps those inside the unit
// disc as a pair of independent Gaussian deviates, tallied into t.
func gaussianPairs(x []float64, t *tally) {
	sx, sy := t.sx, t.sy
	for i := 0; i+1 < len(x); i += 2 {
		x1 := 2*x[i] - 1
		x2 := 2*x[i+1] - 1
		r := float64(x1*x1) + float64(x2*x2) // no FMA: NPB rounds each square
		if r > 1 {
			continue
		}
		f := math.Sqrt(-2 * math.Log(r) / r)
		g1, g2 := float64(x1*f), float64(x2*f)                    // rounded, never fused into the sums
		l := min(int(math.Max(math.Abs(g1), math.Abs(g2))), nq-1) // NPB never sees >= nq
		t.q[l]++
		sx += g1
		sy += g2
	}
	t.sx, t.sy = sx, sy
}
