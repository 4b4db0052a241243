package main

import (
	"slices"
	"testing"
)

func TestMakePlan(t *testing.T) {
	cases := []struct {
		name          string
		totals, local []int32
		size          int
		avg           int64
		first, last   []int
		counts        []int
	}{
		{"even split", []int32{3, 3, 3, 3}, []int32{1, 2, 0, 1}, 2, 6,
			[]int{0, 2}, []int{1, 3}, []int{3, 1}},
		{"one rank takes all", []int32{0, 5, 0}, []int32{0, 5, 0}, 1, 5,
			[]int{0}, []int{2}, []int{5}},
		// A bucket crossing two thresholds closes only one rank; the next
		// bucket closes the next.
		{"big bucket", []int32{1, 10, 1, 0}, []int32{1, 4, 1, 0}, 3, 4,
			[]int{0, 2, 3}, []int{1, 2, 3}, []int{5, 1, 0}},
		// More ranks than non-empty buckets: trailing ranks get nothing
		// (first > last) and receive no keys.
		{"idle ranks", []int32{4, 4}, []int32{2, 2}, 4, 2,
			[]int{0, 1, 2, 2}, []int{0, 1, 1, 1}, []int{2, 2, 0, 0}},
		// The last rank takes the empty buckets at the end too.
		{"trailing empties", []int32{2, 2, 0, 0}, []int32{1, 1, 0, 0}, 2, 2,
			[]int{0, 1}, []int{0, 3}, []int{1, 1}},
	}
	for _, c := range cases {
		pl := makePlan(c.totals, c.local, c.size, c.avg)
		if !slices.Equal(pl.first, c.first) || !slices.Equal(pl.last, c.last) || !slices.Equal(pl.sendCounts, c.counts) {
			t.Errorf("%s: first %v last %v counts %v; want %v %v %v", c.name, pl.first, pl.last, pl.sendCounts, c.first, c.last, c.counts)
		}
		if want := displs(c.counts); !slices.Equal(pl.sendDispls, want) {
			t.Errorf("%s: displs %v, want %v", c.name, pl.sendDispls, want)
		}
		// Every bucket has exactly one owner, in order.
		next := 0
		for j := range c.size {
			if pl.first[j] != next && pl.last[j] >= pl.first[j] {
				t.Errorf("%s: rank %d starts at %d, want %d", c.name, j, pl.first[j], next)
			}
			next = max(next, pl.last[j]+1)
		}
		if next != len(c.totals) {
			t.Errorf("%s: buckets owned up to %d of %d", c.name, next, len(c.totals))
		}
	}
}

func TestLesser(t *testing.T) {
	pl := makePlan([]int32{3, 3, 3, 3}, []int32{0, 0, 0, 0}, 2, 6)
	if m := pl.lesser([]int32{3, 3, 3, 3}, 0); m != 0 {
		t.Errorf("rank 0: %d lesser keys", m)
	}
	if m := pl.lesser([]int32{3, 3, 3, 3}, 1); m != 6 {
		t.Errorf("rank 1: %d lesser keys, want 6", m)
	}
}
