package mpi

import "testing"

func TestProcsFor(t *testing.T) {
	for _, tc := range []struct {
		name               string
		local, procs, want int
		envSet             bool
	}{
		{"one rank, two cores", 1, 2, 0, false},
		{"as many ranks as cores", 2, 2, 0, false},
		{"four ranks on two cores", 4, 2, 1, false},
		{"five ranks on four cores", 5, 4, 1, false},
		{"already one P", 4, 1, 0, false},
		{"the program set GOMAXPROCS", 4, 2, 0, true},
	} {
		if got := procsFor(tc.local, tc.procs, tc.envSet); got != tc.want {
			t.Errorf("%s: procsFor(%d, %d, %v) = %d, want %d", tc.name, tc.local, tc.procs, tc.envSet, got, tc.want)
		}
	}
}
