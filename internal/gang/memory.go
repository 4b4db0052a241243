package gang

// Fits reports whether jobs whose memory is mems (bytes each: the larger of
// what a job declared and what it uses) fit together in lend, the memory
// the owner lends to jobs. lend <= 0 sets no bound. It is the one test of
// "does it fit" for co-scheduling (admission) and for the hybrid technique
// (which jobs may be in memory at once).
func Fits(lend int64, mems ...int64) bool {
	if lend <= 0 {
		return true
	}
	var sum int64
	for _, m := range mems {
		if m < 0 {
			continue
		}
		if m > lend-sum {
			return false
		}
		sum += m
	}
	return true
}

// SwapSets splits jobs (their memory, in the order they came) into the sets
// the hybrid technique switches between: each set fits in lend and is
// co-scheduled; the sets take turns, one in memory at a time. First fit in
// order, so an older job is never pushed behind a younger one; a job larger
// than lend alone is a set by itself (its own limit bounds it). The result
// holds indexes into mems.
func SwapSets(lend int64, mems []int64) [][]int {
	var sets [][]int
	var used []int64
	for i, m := range mems {
		placed := false
		for s := range sets {
			if Fits(lend, used[s], m) {
				sets[s] = append(sets[s], i)
				used[s] += max(m, 0)
				placed = true
				break
			}
		}
		if !placed {
			sets = append(sets, []int{i})
			used = append(used, max(m, 0))
		}
	}
	return sets
}
