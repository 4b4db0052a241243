package npb

// Block returns the share of n items (keys, batches) that rank holds when
// they are cut into size contiguous blocks: the first n%size ranks hold one
// more item than the others, as NPB EP spreads its batches. It returns the
// index of the first item and the count. size must be > 0 and
// 0 <= rank < size.
func Block(n int64, size, rank int) (start, count int64) {
	q, rem := n/int64(size), n%int64(size)
	r := int64(rank)
	if r < rem {
		return r * (q + 1), q + 1
	}
	return rem*(q+1) + (r-rem)*q, q
}

// Owner returns the rank whose Block holds item i of n items cut into size
// blocks. 0 <= i < n.
func Owner(i, n int64, size int) int {
	q, rem := n/int64(size), n%int64(size)
	big := rem * (q + 1)
	if i < big {
		return int(i / (q + 1))
	}
	return int(rem + (i-big)/q)
}
