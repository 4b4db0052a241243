package mpi_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// TestSitesEqualFlat runs every host-aware collective with the hosts and
// their sites, and flat, on every size 1..9 (jobSizes) with 1 to 4
// consecutive ranks per host, the three agents in one, two (in and out of
// host order) and three sites, and compares both with the exact result;
// then the same on split communicators (compareSplits).
func TestSitesEqualFlat(t *testing.T) {
	var sited atomic.Int32
	layouts := [][]int{{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {0, 1, 2}}
	if testing.Short() {
		layouts = layouts[1:] // one site is TestHierarchicalEqualsFlat's
	}
	for _, sites := range layouts {
		for per := 1; per <= 4; per++ {
			for _, n := range jobSizes() {
				t.Run(fmt.Sprintf("sites-%v/%d-per-host/%d", sites, per, n), func(t *testing.T) {
					place := func(r int) int { return (r / per) % len(cluster.Hosts) }
					j, err := cluster.AddSitedJob(n, place, sites)
					if err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					errs := j.Run(ctx, func(c *mpi.Comm) error {
						if c.Rank() == 0 && mpi.SiteLevel(c) {
							sited.Add(1)
						}
						if err := bothLevels(c); err != nil {
							return err
						}
						return compareSplits(c, func(*mpi.Comm) {})
					})
					for r, err := range errs {
						if err != nil {
							t.Errorf("rank %d: %v", r, err)
						}
					}
				})
			}
		}
	}
	minSited := 20 // of 144 layouts; 32 had a site level when written
	if testing.Short() {
		minSited = 6 // of 48; 8
	}
	if int(sited.Load()) < minSited {
		t.Errorf("only %d layouts had a site level", sited.Load())
	}
}
