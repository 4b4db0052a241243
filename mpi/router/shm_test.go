package router

import "testing"

func TestRingCap(t *testing.T) {
	cfg := DefaultConfig()
	off := cfg
	off.ShmRing = 0
	odd := cfg
	odd.ShmRing = 3 << 19 // 1.5 MiB: rounded down to a power of two
	tiny := cfg
	tiny.ShmJobBytes = 100 << 10
	for _, tc := range []struct {
		name string
		cfg  Config
		k    int
		want int
	}{
		{"one rank", cfg, 1, 0},
		{"two ranks", cfg, 2, 1 << 20},
		{"nine ranks fit whole rings", cfg, 9, 1 << 20},
		{"sixteen ranks share the job's bound", cfg, 16, 512 << 10},
		{"thirty-two ranks", cfg, 32, 128 << 10},
		{"too many ranks", cfg, maxShmRanks + 1, 0},
		{"off", off, 4, 0},
		{"not a power of two", odd, 2, 1 << 20},
		{"bound below the smallest rings", tiny, 9, 0},
		{"bound that fits small rings", tiny, 3, 16 << 10},
	} {
		if got := tc.cfg.ringCap(tc.k); got != tc.want {
			t.Errorf("%s: ring of %d bytes, want %d", tc.name, got, tc.want)
		}
	}
}
