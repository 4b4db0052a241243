package main

import (
	"testing"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
)

func TestExpectedRank(t *testing.T) {
	// NPB 3.4's per-class shifts of test_rank_array, at iterations 1 and 10.
	cases := []struct {
		class    byte
		i, it    int
		wantRank int64
	}{
		{'S', 0, 1, 1}, {'S', 2, 10, 356}, {'S', 3, 1, 64916}, {'S', 4, 10, 65453},
		{'W', 0, 1, 1248}, {'W', 1, 10, 11706}, {'W', 2, 1, 1039986}, {'W', 4, 10, 1048008},
		{'A', 0, 1, 104}, {'A', 2, 10, 123937}, {'A', 3, 1, 8288932}, {'A', 4, 10, 8388255},
		{'B', 0, 1, 33422936}, {'B', 1, 10, 10254}, {'B', 3, 10, 33135271}, {'B', 4, 1, 100},
	}
	for _, c := range cases {
		if got := classes[npb.Class(c.class)].expectedRank(c.i, c.it); got != c.wantRank {
			t.Errorf("class %c key %d iteration %d: rank %d, want %d", c.class, c.i, c.it, got, c.wantRank)
		}
	}
}

func TestBucketsBounded(t *testing.T) {
	for c, p := range classes {
		if p.buckets() > maxBuckets || p.maxKeyLog2 < p.bucketsLog2 {
			t.Errorf("class %c: %d buckets of keys below 2^%d, at most %d allowed", c, p.buckets(), p.maxKeyLog2, maxBuckets)
		}
	}
}

func TestParamsFor(t *testing.T) {
	for arg, keys := range map[string]int64{"S": 1 << 16, "W": 1 << 20, "a": 1 << 23, "B": 1 << 25} {
		p, err := paramsFor(arg)
		if err != nil || p.totalKeys() != keys {
			t.Errorf("paramsFor(%q) = %v keys, %v", arg, p.totalKeys(), err)
		}
	}
	for _, bad := range []string{"", "C", "SS", "x"} {
		if _, err := paramsFor(bad); err == nil {
			t.Errorf("paramsFor(%q) accepted", bad)
		}
	}
	s := classes['S']
	for size, ok := range map[int]bool{0: false, 1: true, 3: true, 128: true, 129: false} {
		if err := s.checkSize(size); (err == nil) != ok {
			t.Errorf("class S on %d ranks: %v", size, err)
		}
	}
}
