package mpi_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// cluster is three agents shared by the tests of this package; each test
// adds its own jobs.
var cluster *mpitest.Cluster

func TestMain(m *testing.M) {
	c, err := mpitest.NewCluster(3, router.DefaultConfig())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cluster = c
	code := m.Run()
	if err := c.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close cluster:", err)
	}
	os.Exit(code)
}

// run runs fn on size ranks placed by place and fails the test on any
// rank's error.
func run(t *testing.T, size int, place func(int) int, fn func(c *mpi.Comm) error) {
	t.Helper()
	for r, err := range runErrs(t, size, place, fn) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// runErrs runs fn on size ranks and returns each rank's error.
func runErrs(t *testing.T, size int, place func(int) int, fn func(c *mpi.Comm) error) []error {
	t.Helper()
	if place == nil {
		place = mpitest.RoundRobin(len(cluster.Hosts))
	}
	j, err := cluster.AddJob(size, place)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return j.Run(ctx, fn)
}

// jobSizes are the job sizes a sweep over layouts runs: 1 to 9 ranks, or
// under -short (CI's run with the race detector, where the whole sweep
// costs minutes) one rank, a power of two, and an even and an odd size
// that leave a host part full.
func jobSizes() []int {
	if testing.Short() {
		return []int{1, 2, 4, 7}
	}
	return []int{1, 2, 3, 4, 5, 6, 7, 8, 9}
}

// placements are the layouts every behaviour is checked on: all ranks on
// one agent, spread over three, and in blocks of two.
var placements = map[string]func(int) int{
	"one agent": func(int) int { return 0 },
	"spread":    mpitest.RoundRobin(3),
	"blocks":    func(r int) int { return (r / 2) % 3 },
}
