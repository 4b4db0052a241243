package npb

import "testing"

func TestBlockTable(t *testing.T) {
	cases := []struct {
		n            int64
		size, rank   int
		start, count int64
	}{
		{16, 4, 0, 0, 4},
		{16, 4, 3, 12, 4},
		{10, 4, 0, 0, 3}, // 10 = 3+3+2+2
		{10, 4, 1, 3, 3},
		{10, 4, 2, 6, 2},
		{10, 4, 3, 8, 2},
		{2, 3, 2, 2, 0}, // more ranks than items: the last is empty
		{1 << 30, 1, 0, 0, 1 << 30},
	}
	for _, c := range cases {
		s, k := Block(c.n, c.size, c.rank)
		if s != c.start || k != c.count {
			t.Errorf("Block(%d, %d, %d) = %d, %d; want %d, %d", c.n, c.size, c.rank, s, k, c.start, c.count)
		}
	}
}

func TestBlocksTileAndOwnerAgrees(t *testing.T) {
	for n := int64(0); n <= 40; n++ {
		for size := 1; size <= 9; size++ {
			next := int64(0)
			for r := range size {
				s, k := Block(n, size, r)
				if s != next || k < 0 {
					t.Fatalf("Block(%d, %d, %d) = %d, %d; want start %d", n, size, r, s, k, next)
				}
				for i := s; i < s+k; i++ {
					if o := Owner(i, n, size); o != r {
						t.Fatalf("Owner(%d, %d, %d) = %d, want %d", i, n, size, o, r)
					}
				}
				next = s + k
			}
			if next != n {
				t.Fatalf("blocks of %d over %d end at %d", n, size, next)
			}
		}
	}
}
