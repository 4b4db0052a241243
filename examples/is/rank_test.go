package main

import (
	"slices"
	"testing"
)

// lockstep runs IS on size ranks in one goroutine, doing the collectives
// (Allreduce, Alltoall, Alltoallv, the neighbour exchange) as plain array
// moves between the rankers. tamper, when set, may change the keys each
// rank receives at the last iteration. It returns NPB's verification count
// (5 per timed iteration plus one per rank whose keys are in order; all
// passed is 5*maxIterations+size) and the failure messages.
func lockstep(p params, size int, tamper func(recv [][]int32)) (int, []string) {
	rs := make([]*ranker, size)
	for r := range rs {
		rs[r] = newRanker(p, size, r)
	}
	passed, failures := 0, []string(nil)
	iterate := func(it int) {
		locals := make([][]int32, size)
		totals := make([]int32, p.buckets()+testArraySize)
		for r, rk := range rs {
			locals[r] = slices.Clone(rk.bucketize(it))
			for i, v := range locals[r] {
				totals[i] += v
			}
		}
		plans := make([]plan, size)
		for r := range rs {
			plans[r] = makePlan(totals, locals[r][:p.buckets()], size, rs[r].avg)
		}
		recv := make([][]int32, size)
		for dst := range rs {
			for src, rk := range rs {
				off, n := plans[src].sendDispls[dst], plans[src].sendCounts[dst]
				recv[dst] = append(recv[dst], rk.grouped[off:off+n]...)
			}
		}
		if it == maxIterations && tamper != nil {
			tamper(recv)
		}
		for r, rk := range rs {
			n, f := rk.rankKeys(it, totals, plans[r], recv[r])
			passed += n
			failures = append(failures, f...)
		}
	}
	iterate(1) // NPB's untimed warm-up iteration
	passed, failures = 0, nil
	for it := 1; it <= maxIterations; it++ {
		iterate(it)
	}
	var prev int32
	has := false
	for _, rk := range rs {
		sorted := rk.sortedKeys()
		if outOfOrder(sorted, prev, has)+rk.stray == 0 {
			passed++
		}
		if len(sorted) > 0 {
			prev, has = sorted[len(sorted)-1], true
		}
	}
	return passed, failures
}

func TestClassSVerifies(t *testing.T) {
	p := classes['S']
	for _, size := range []int{1, 2, 3, 8, 13} {
		passed, failures := lockstep(p, size, nil)
		if want := 5*maxIterations + size; passed != want || len(failures) > 0 {
			t.Errorf("%d ranks: %d of %d checks passed; %v", size, passed, want, failures)
		}
	}
}

func TestClassSKeysAreSortedOnOneRank(t *testing.T) {
	p := classes['S']
	r := newRanker(p, 1, 0)
	local := slices.Clone(r.bucketize(1))
	pl := makePlan(local, local[:p.buckets()], 1, r.avg)
	recv := slices.Clone(r.grouped)
	if n, f := r.rankKeys(1, local, pl, recv); n != testArraySize || len(f) > 0 {
		t.Fatalf("partial verification: %d passed, %v", n, f)
	}
	sorted := r.sortedKeys()
	want := slices.Clone(r.keys)
	slices.Sort(want)
	if !slices.Equal(sorted, want) {
		t.Fatal("sortedKeys is not the sorted key array")
	}
}

func TestVerificationCatchesBadExchange(t *testing.T) {
	p := classes['S']
	cases := map[string]func(recv [][]int32){
		// A key lost in transit moves every rank above it by one.
		"lost key": func(recv [][]int32) { recv[0] = recv[0][1:] },
		// A key delivered to the wrong rank lies outside its buckets.
		"misrouted key": func(recv [][]int32) {
			recv[3] = append(recv[3], recv[0][0])
			recv[0] = recv[0][1:]
		},
	}
	for name, tamper := range cases {
		passed, failures := lockstep(p, 4, tamper)
		if passed == 5*maxIterations+4 || len(failures) == 0 {
			t.Errorf("%s: verification passed (%d, %v)", name, passed, failures)
		}
	}
}

func TestKeysDoNotDependOnTheSplit(t *testing.T) {
	p := classes['S']
	whole := make([]int32, p.totalKeys())
	generateKeys(whole, 0, p.maxKey())
	for _, k := range whole {
		if k < 0 || k >= p.maxKey() {
			t.Fatalf("key %d outside [0, %d)", k, p.maxKey())
		}
	}
	for _, size := range []int{2, 3, 8} {
		var joined []int32
		for r := range size {
			joined = append(joined, newRanker(p, size, r).keys...)
		}
		if !slices.Equal(joined, whole) {
			t.Fatalf("keys on %d ranks differ from one rank's", size)
		}
	}
}

func TestOutOfOrder(t *testing.T) {
	for _, c := range []struct {
		keys    []int32
		prev    int32
		hasPrev bool
		want    int
	}{
		{[]int32{1, 2, 2, 3}, 0, false, 0},
		{[]int32{1, 2, 2, 3}, 1, true, 0},
		{[]int32{1, 2, 2, 3}, 2, true, 1},
		{[]int32{3, 1, 2, 0}, 0, false, 2},
		{nil, 9, true, 0},
	} {
		if got := outOfOrder(c.keys, c.prev, c.hasPrev); got != c.want {
			t.Errorf("outOfOrder(%v, %d, %v) = %d, want %d", c.keys, c.prev, c.hasPrev, got, c.want)
		}
	}
}

func TestClassWVerifiesOnFourRanks(t *testing.T) {
	// Class W's test ranks move differently (upOff -2): check them too.
	if passed, failures := lockstep(classes['W'], 4, nil); passed != 5*maxIterations+4 || len(failures) > 0 {
		t.Fatalf("%d checks passed; %v", passed, failures)
	}
}
