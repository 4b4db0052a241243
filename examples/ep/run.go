package main

import (
	"context"
	"fmt"
	"io"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
)

// comm is what EP needs of the MPI library.
type comm interface {
	Rank() int
	Size() int
	Barrier(ctx context.Context) error
	AllreduceSumFloat64(ctx context.Context, v []float64) error
	AllreduceMaxFloat64(ctx context.Context, v []float64) error
}

// run runs EP class p on this rank: its share of the batches, then the sums
// over all ranks. Rank 0 prints NPB's report to out. It returns the
// results, the same on every rank (Verified: the sums match NPB's).
func run(ctx context.Context, c comm, p params, out io.Writer) (npb.Results, error) {
	size, rank := c.Size(), c.Rank()
	if rank == 0 {
		fmt.Fprintf(out, "\n NAS Parallel Benchmarks %s -- EP Benchmark\n\n", npb.Version)
		fmt.Fprintf(out, " Number of random numbers generated: %15.0f  (class %v)\n", p.size(), p.class)
		fmt.Fprintf(out, " Total number of processes:          %15d\n\n", size)
	}
	if err := c.Barrier(ctx); err != nil {
		return npb.Results{}, fmt.Errorf("barrier: %w", err)
	}
	var timer npb.Timer
	timer.Start()
	share, err := rankShare(ctx, p, size, rank)
	if err != nil {
		return npb.Results{}, err
	}
	sums := share.vector()
	if err := c.AllreduceSumFloat64(ctx, sums); err != nil {
		return npb.Results{}, fmt.Errorf("sum tallies: %w", err)
	}
	timer.Stop()
	secs := []float64{timer.Seconds()}
	if err := c.AllreduceMaxFloat64(ctx, secs); err != nil {
		return npb.Results{}, fmt.Errorf("reduce time: %w", err)
	}
	t := tallyFrom(sums)
	ok, ex, ey := p.verify(t.sx, t.sy)
	res := npb.Results{Name: "EP", Class: p.class, Size: fmt.Sprintf("%.0f", p.size()),
		Seconds: secs[0], Procs: size, Mops: p.size() / secs[0] / 1e6,
		Operation: "Random numbers generated", Verified: ok}
	if rank != 0 {
		return res, nil
	}
	report(out, p, t, secs[0])
	if !ok {
		fmt.Fprintf(out, " Relative errors: sx %.3e, sy %.3e (bound %.0e)\n", ex, ey, epsilon)
	}
	return res, res.Print(out)
}

// report prints EP's own block: time, sums and the annulus counts.
func report(out io.Writer, p params, t tally, secs float64) {
	fmt.Fprintf(out, "EP Benchmark Results:\n\nCPU Time =%10.4f\nN = 2^%5d\nNo. Gaussian Pairs =%15.0f\n",
		secs, p.m, t.pairs())
	fmt.Fprintf(out, "Sums = %25.15e%25.15e\nCounts:\n", t.sx, t.sy)
	for i, q := range t.q {
		fmt.Fprintf(out, "%3d%15.0f\n", i, q)
	}
}
