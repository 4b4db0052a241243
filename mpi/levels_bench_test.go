package mpi_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// BenchmarkAllreduceHostAware is the figure: Allreduce of 8 B and
// of 8 MiB on 8 ranks over 4 agents (2 per agent, consecutive ranks), the
// host-aware algorithm against the flat one, in interleaved rounds (b.N
// rounds; each runs both, back to back). It reports the medians of each
// and the median of the per-round ratios flat / host-aware:
//
//	go test -run '^$' -bench AllreduceHostAware -benchtime 10x ./mpi/
func BenchmarkAllreduceHostAware(b *testing.B) {
	c, err := mpitest.NewCluster(4, router.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		name  string
		elems int // float64s
		reps  int // allreduces per measurement
	}{{"8B", 1, 200}, {"8MiB", 1 << 20, 2}} {
		b.Run(tc.name, func(b *testing.B) {
			var rounds levelRounds
			j, err := c.AddJob(8, func(r int) int { return r / 2 })
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			errs := j.Run(ctx, func(w *mpi.Comm) error {
				if !mpi.Hierarchical(w) {
					return fmt.Errorf("the layout does not use the hosts")
				}
				buf := make([]float64, tc.elems)
				for i := 0; i < b.N; i++ {
					if err := rounds.add(w, func(c *mpi.Comm) (float64, error) { return timeAllreduce(c, buf, tc.reps) }); err != nil {
						return err
					}
				}
				return nil
			})
			reportLevels(b, errs, rounds)
		})
	}
}

// timeAllreduce is the time of one Allreduce, averaged over reps between
// two barriers, as rank 0 sees it.
func timeAllreduce(c *mpi.Comm, buf []float64, reps int) (float64, error) {
	if err := c.Barrier(); err != nil {
		return 0, err
	}
	t0 := mpi.Wtime()
	for k := 0; k < reps; k++ {
		if err := mpi.Allreduce(c, buf, buf, mpi.Max[float64]); err != nil {
			return 0, err
		}
	}
	if err := c.Barrier(); err != nil {
		return 0, err
	}
	return (mpi.Wtime() - t0) / float64(reps), nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkExchangesHostAware is the figure for the gathers: Alltoall,
// Alltoallv and Allgather on 8 ranks over 4 agents (2 per agent,
// consecutive ranks), the host-aware algorithm against the flat one, in
// interleaved rounds like BenchmarkAllreduceHostAware; then the same with
// the agents in 2 sites (agents 0, 1 and 2, 3), where the host leaders of
// a site combine before crossing. Loopback has no delay between sites, so
// the sites' rows show the cost of the extra level, not a gain:
//
//	go test -run '^$' -bench ExchangesHostAware -benchtime 10x ./mpi/
func BenchmarkExchangesHostAware(b *testing.B) {
	c, err := mpitest.NewCluster(4, router.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, sites := range []struct {
		name string
		site []int
	}{{"hosts", nil}, {"2sites", []int{0, 0, 1, 1}}} {
		for _, tc := range []struct {
			name  string
			elems int // float64s per block
			reps  int
			op    func(c *mpi.Comm, send, recv []float64) error
		}{
			{"alltoall-8B", 1, 100, alltoall},
			{"alltoall-4KiB", 512, 20, alltoall},
			{"alltoallv-8B", 1, 100, alltoallvEqual},
			{"alltoallv-4KiB", 512, 20, alltoallvEqual},
			{"alltoallv-64KiB", 8192, 5, alltoallvEqual},
			{"allgather-8B", 1, 100, allgather},
			{"allgather-64KiB", 8192, 5, allgather},
		} {
			b.Run(sites.name+"/"+tc.name, func(b *testing.B) {
				var rounds levelRounds
				place := func(r int) int { return r / 2 }
				var j *mpitest.Job
				var err error
				if sites.site == nil {
					j, err = c.AddJob(8, place)
				} else {
					j, err = c.AddSitedJob(8, place, sites.site)
				}
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				errs := j.Run(ctx, func(w *mpi.Comm) error {
					if !mpi.Hierarchical(w) || (sites.site != nil) != mpi.SiteLevel(w) {
						return fmt.Errorf("the layout does not use the hosts (or sites) as it should")
					}
					send, recv := make([]float64, 8*tc.elems), make([]float64, 8*tc.elems)
					for i := 0; i < b.N; i++ {
						if err := rounds.add(w, func(c *mpi.Comm) (float64, error) { return timeOp(c, send, recv, tc.reps, tc.op) }); err != nil {
							return err
						}
					}
					return nil
				})
				reportLevels(b, errs, rounds)
			})
		}
	}
}

func alltoall(c *mpi.Comm, send, recv []float64) error { return mpi.Alltoall(c, send, recv) }

// alltoallvEqual is Alltoall through Alltoallv: equal blocks.
func alltoallvEqual(c *mpi.Comm, send, recv []float64) error {
	n := c.Size()
	k := len(send) / n
	counts, displs := make([]int, n), make([]int, n)
	for i := range counts {
		counts[i], displs[i] = k, i*k
	}
	return mpi.Alltoallv(c, send, counts, displs, recv, counts, displs)
}

// allgather gathers one block (len(send)/Size() elements) from each rank.
func allgather(c *mpi.Comm, send, recv []float64) error {
	return mpi.Allgather(c, send[:len(send)/c.Size()], recv)
}

// timeOp is the time of one op, averaged over reps between two barriers,
// as rank 0 sees it.
func timeOp(c *mpi.Comm, send, recv []float64, reps int, op func(c *mpi.Comm, send, recv []float64) error) (float64, error) {
	if err := c.Barrier(); err != nil {
		return 0, err
	}
	t0 := mpi.Wtime()
	for k := 0; k < reps; k++ {
		if err := op(c, send, recv); err != nil {
			return 0, err
		}
	}
	if err := c.Barrier(); err != nil {
		return 0, err
	}
	return (mpi.Wtime() - t0) / float64(reps), nil
}

// levelRounds holds rank 0's times of the rounds: the host-aware call, the
// flat one on the same ranks, and their ratio.
type levelRounds struct{ hier, flat, ratio []float64 }

// add runs one round: timed on w (host-aware) and then on mpi.Flat(w).
func (l *levelRounds) add(w *mpi.Comm, timed func(*mpi.Comm) (float64, error)) error {
	th, err := timed(w)
	if err != nil {
		return err
	}
	tf, err := timed(mpi.Flat(w))
	if err != nil {
		return err
	}
	if w.Rank() == 0 {
		l.hier, l.flat, l.ratio = append(l.hier, th), append(l.flat, tf), append(l.ratio, tf/th)
	}
	return nil
}

// reportLevels fails on a rank's error, else reports the medians over the
// rounds of the host-aware and flat times and of their per-round ratio.
func reportLevels(b *testing.B, errs []error, l levelRounds) {
	b.Helper()
	for r, err := range errs {
		if err != nil {
			b.Fatalf("rank %d: %v", r, err)
		}
	}
	b.ReportMetric(median(l.hier)*1e6, "host-aware-µs/op")
	b.ReportMetric(median(l.flat)*1e6, "flat-µs/op")
	b.ReportMetric(median(l.ratio), "flat/host-aware")
	b.ReportMetric(0, "ns/op")
}
