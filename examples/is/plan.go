package main

// plan is how the keys move between ranks in one iteration: rank j takes
// the buckets first[j]..last[j] (none when last[j] < first[j]), and this
// rank sends sendCounts[j] keys to rank j, from offset sendDispls[j] of its
// keys grouped by bucket.
type plan struct {
	first, last            []int
	sendCounts, sendDispls []int
}

// makePlan is NPB's redistribution rule, over the global bucket sizes
// totals and this rank's own bucket sizes local (both of len buckets):
// walking the buckets in order, rank j takes buckets until the running
// total reaches (j+1)*avg keys, avg being the keys per rank. Every rank
// computes the same bucket ranges from the same totals. Unlike NPB, the
// last rank also takes any empty buckets at the end, so that every bucket
// has an owner with any number of ranks.
func makePlan(totals, local []int32, size int, avg int64) plan {
	var pl plan
	pl.fill(totals, local, size, avg)
	return pl
}

// fill is makePlan into pl, reusing its slices: an iteration allocates
// nothing.
func (pl *plan) fill(totals, local []int32, size int, avg int64) {
	pl.first = resize(pl.first, size)
	pl.last = resize(pl.last, size)
	pl.sendCounts = resize(pl.sendCounts, size)
	pl.sendDispls = resize(pl.sendDispls, size)
	var acc int64
	mine, j := 0, 0
	nb := len(local)
	for i := 0; i < nb && j < size; i++ {
		acc += int64(totals[i])
		mine += int(local[i])
		closes := acc >= int64(j+1)*avg
		if j == size-1 {
			closes = i == nb-1
		}
		if !closes {
			continue
		}
		pl.sendCounts[j] = mine
		pl.last[j] = i
		if j > 0 {
			pl.sendDispls[j] = pl.sendDispls[j-1] + pl.sendCounts[j-1]
			pl.first[j] = pl.last[j-1] + 1
		}
		mine = 0
		j++
	}
	for ; j < size; j++ { // ranks left without a bucket
		pl.first[j], pl.last[j] = nb, nb-1
		if j > 0 {
			pl.sendDispls[j] = pl.sendDispls[j-1] + pl.sendCounts[j-1]
		}
	}
}

// resize returns s with length n and every element zero, reusing its
// array when large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// displs returns the offsets of consecutive blocks of the given counts.
func displs(counts []int) []int {
	return fillDispls(make([]int, len(counts)), counts)
}

// fillDispls sets d (of len(counts)) to the offsets of consecutive blocks
// of the given counts and returns it.
func fillDispls(d, counts []int) []int {
	if len(d) > 0 {
		d[0] = 0
	}
	for i := 1; i < len(counts); i++ {
		d[i] = d[i-1] + counts[i-1]
	}
	return d
}

// lesser is the number of keys in the buckets of the ranks below rank: the
// global rank of the smallest key rank holds.
func (pl plan) lesser(totals []int32, rank int) int64 {
	var m int64
	for k := 0; k < rank; k++ {
		for i := pl.first[k]; i <= pl.last[k]; i++ {
			m += int64(totals[i])
		}
	}
	return m
}
