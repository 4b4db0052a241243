package main

import (
	"fmt"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
)

// ranker is one rank's state of IS: its stretch of the keys and the work
// arrays of NPB's rank(). An iteration runs bucketize, then (after the
// exchange the caller does) rankKeys; sortedKeys runs once at the end.
// A ranker is used by one goroutine.
type ranker struct {
	p          params
	size, rank int
	first      int64             // global index of keys[0]
	avg        int64             // keys per rank, the redistribution's target
	keys       []int32           // key_array: this rank's keys
	grouped    []int32           // key_buff1: keys grouped by bucket, to send
	local      []int32           // bucket sizes, then the test keys this rank holds
	sizes      [maxBuckets]int32 // bucket sizes, counted
	ptrs       [maxBuckets]int32 // next free slot of each bucket in grouped

	// Left by the last rankKeys for sortedKeys.
	recv       []int32 // key_buff2: the keys this rank ranks
	counts     []int32 // key_buff1 reused: keys <= minKey+i among recv
	minKey     int32   // smallest key this rank can hold
	lesserKeys int64   // keys held by lower ranks
	stray      int     // keys received outside this rank's buckets
}

// newRanker generates rank's keys out of size ranks.
func newRanker(p params, size, rank int) *ranker {
	first, n := npb.Block(p.totalKeys(), size, rank)
	r := &ranker{
		p: p, size: size, rank: rank, first: first,
		avg:     p.totalKeys() / int64(size),
		keys:    make([]int32, n),
		grouped: make([]int32, n),
		local:   make([]int32, p.buckets()+testArraySize),
	}
	generateKeys(r.keys, first, p.maxKey())
	return r
}

// holds returns the local index of global key index g, if this rank has it.
func (r *ranker) holds(g int64) (int, bool) {
	i := g - r.first
	return int(i), i >= 0 && i < int64(len(r.keys))
}

// bucketize starts iteration it: it alters two keys as NPB does (so that
// every iteration sorts something new), counts this rank's keys per bucket,
// groups them by bucket, and returns the bucket sizes followed by the values
// of the test keys this rank holds (zero for the others), to be summed over
// all ranks.
func (r *ranker) bucketize(it int) []int32 {
	r.setIterationKeys(it)
	clear(r.local)
	nb := r.p.buckets()
	for t, g := range r.p.testIndex {
		if i, ok := r.holds(g); ok {
			r.local[nb+t] = r.keys[i]
		}
	}
	sizes := &r.sizes
	clear(sizes[:])
	countBuckets(sizes, r.keys, r.p.shift())
	copy(r.local[:nb], sizes[:nb])
	var acc int32
	for b, n := range sizes {
		r.ptrs[b] = acc
		acc += n
	}
	scatter(r.grouped, &r.ptrs, r.keys, r.p.shift())
	return r.local
}

// The loops of bucketize, each a function of its own so that it keeps
// everything in registers. The buckets are arrays of maxBuckets and the
// bucket is masked to them, which proves it in range and drops the bounds
// check; the shift is masked and the key taken unsigned so that it compiles
// to one shift instruction. Keys are in [0, maxKey), so their bucket is
// below the class's buckets() <= maxBuckets and neither mask changes it.
// With that they run as fast as NPB's C loops.

// countBuckets adds to sizes the number of keys in each bucket.
func countBuckets(sizes *[maxBuckets]int32, keys []int32, shift uint) {
	shift &= 31
	for _, k := range keys {
		sizes[uint32(k)>>shift&(maxBuckets-1)]++
	}
}

// scatter puts each key at the next free slot of its bucket in grouped,
// ptrs holding the slots.
func scatter(grouped []int32, ptrs *[maxBuckets]int32, keys []int32, shift uint) {
	shift &= 31
	for _, k := range keys {
		b := uint32(k) >> shift & (maxBuckets - 1)
		grouped[ptrs[b]] = k
		ptrs[b]++
	}
}

// rankKeys ends iteration it: given the summed bucket sizes and test keys
// (totals), the plan, and the keys this rank received (all in its buckets),
// it counts each key value and accumulates the counts, which gives every
// key its rank. Then it checks the ranks of the test keys that fall in its
// range against NPB's values and returns how many passed and a description
// of each failure.
func (r *ranker) rankKeys(it int, totals []int32, pl plan, recv []int32) (int, []string) {
	shift := r.p.shift()
	lo := int32(pl.first[r.rank]) << shift
	hi := int32(pl.last[r.rank]+1)<<shift - 1 // hi < lo: no bucket
	r.recv, r.minKey = recv, lo
	r.lesserKeys = pl.lesser(totals, r.rank)
	n := max(int(hi-lo+1), 0)
	if cap(r.counts) < n {
		r.counts = make([]int32, n, n+n/2) // room for the next iterations' (see x.recv)
	}
	counts := r.counts[:n]
	clear(counts)
	stray := countKeys(counts, recv, lo)
	var acc int32
	for i, c := range counts {
		acc += c
		counts[i] = acc
	}
	r.counts, r.stray = counts, stray
	passed, failures := r.partialVerify(it, totals[r.p.buckets():], lo, hi)
	if r.stray > 0 {
		failures = append(failures, fmt.Sprintf(
			"iteration %d, processor %d: %d keys received outside buckets %d..%d",
			it, r.rank, r.stray, pl.first[r.rank], pl.last[r.rank]))
	}
	return passed, failures
}

// countKeys counts each key of keys in counts[key-lo] and returns how many
// keys fall outside counts, which a correct exchange never delivers. It is
// a function of its own so that its loop keeps everything in registers, and
// the one comparison both finds the strays and proves the index in range
// (no bounds check): the loop runs as fast as NPB's C.
func countKeys(counts, keys []int32, lo int32) int {
	stray, n := 0, uint(len(counts))
	for _, k := range keys {
		if i := uint(uint32(k - lo)); i < n {
			counts[i]++
		} else {
			stray++
		}
	}
	return stray
}

// partialVerify checks the global rank of each test key in [lo, hi]: the
// number of keys smaller than it.
func (r *ranker) partialVerify(it int, testKeys []int32, lo, hi int32) (int, []string) {
	passed := 0
	var failures []string
	for i, k := range testKeys {
		if k < lo || k > hi {
			continue
		}
		got := r.lesserKeys
		if k > lo {
			got += int64(r.counts[k-1-lo])
		}
		if want := r.p.expectedRank(i, it); got != want {
			failures = append(failures, fmt.Sprintf(
				"Failed partial verification: iteration %d, processor %d, test key %d, key rank %d (want %d)",
				it, r.rank, i, got, want))
			continue
		}
		passed++
	}
	return passed, failures
}

// sortedKeys places the keys of the last ranking at their ranks, which
// sorts them, as NPB's full_verify does. It consumes the counts. Stray keys
// are left out, and the caller counts them as out of order.
func (r *ranker) sortedKeys() []int32 {
	out := make([]int32, len(r.recv)-r.stray)
	for _, k := range r.recv {
		if uint32(k-r.minKey) >= uint32(len(r.counts)) {
			continue
		}
		c := &r.counts[k-r.minKey]
		*c--
		out[*c] = k
	}
	return out
}

// outOfOrder counts the places where sorted is not in order, including
// against prev, the largest key of the ranks below (when hasPrev).
func outOfOrder(sorted []int32, prev int32, hasPrev bool) int {
	bad := 0
	if hasPrev && len(sorted) > 0 && prev > sorted[0] {
		bad++
	}
	for i := 1; i < len(sorted); i++ {
		if sorted[i-1] > sorted[i] {
			bad++
		}
	}
	return bad
}

// setIterationKeys sets the two keys iteration it changes (NPB's rank).
func (r *ranker) setIterationKeys(it int) {
	if i, ok := r.holds(int64(it)); ok {
		r.keys[i] = int32(it)
	}
	if i, ok := r.holds(int64(it + maxIterations)); ok {
		r.keys[i] = r.p.maxKey() - int32(it)
	}
}
