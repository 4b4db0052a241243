package main

import (
	"context"
	"fmt"
	"io"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
)

// comm is what IS needs of the MPI library.
type comm interface {
	Rank() int
	Size() int
	Barrier(ctx context.Context) error
	AllreduceSumInt32(ctx context.Context, v []int32) error
	AllreduceMaxFloat64(ctx context.Context, v []float64) error
	Alltoall(ctx context.Context, send, recv []int32) error
	Alltoallv(ctx context.Context, send []int32, sendCounts, sendDispls []int, recv []int32, recvCounts, recvDispls []int) error
	SendInt32(ctx context.Context, to, tag int, v []int32) error
	RecvInt32(ctx context.Context, from, tag int, v []int32) error
}

// boundaryTag is the tag of full verification's neighbour exchange (NPB's).
const boundaryTag = 1000

// run runs IS class p on this rank: key generation, an untimed warm-up
// ranking, the timed iterations and the full verification. Rank 0 prints
// NPB's report to out, and any rank prints its verification failures. It
// returns the results, the same on every rank (Verified included).
func run(ctx context.Context, c comm, p params, out io.Writer) (npb.Results, error) {
	size, rank := c.Size(), c.Rank()
	if err := p.checkSize(size); err != nil {
		return npb.Results{}, err
	}
	if rank == 0 {
		fmt.Fprintf(out, "\n\n NAS Parallel Benchmarks %s -- IS Benchmark\n\n", npb.Version)
		fmt.Fprintf(out, " Size:  %d  (class %v)\n Iterations:   %d\n Number of processes:     %d\n",
			p.totalKeys(), p.class, maxIterations, size)
	}
	x := &exchange{c: c, r: newRanker(p, size, rank), totals: make([]int32, p.buckets()+testArraySize)}
	restored, err := x.restore()
	if err != nil {
		return npb.Results{}, err
	}
	if !restored {
		if _, _, err := x.iterate(ctx, 1); err != nil { // untimed, as NPB
			return npb.Results{}, err
		}
	}
	passed, secs, err := x.timed(ctx, out)
	if err != nil {
		return npb.Results{}, err
	}
	bad, err := fullVerify(ctx, c, x.r)
	if err != nil {
		return npb.Results{}, err
	}
	if bad != 0 {
		fmt.Fprintf(out, "Processor %d:  Full_verify: number of keys out of sort: %d\n", rank, bad)
	} else {
		passed++
	}
	sum := []int32{int32(passed)}
	if err := c.AllreduceSumInt32(ctx, sum); err != nil {
		return npb.Results{}, fmt.Errorf("sum verification: %w", err)
	}
	res := npb.Results{Name: "IS", Class: p.class, Size: fmt.Sprint(p.totalKeys()), Iterations: maxIterations,
		Seconds: secs, Procs: size, Mops: float64(maxIterations*p.totalKeys()) / secs / 1e6,
		Operation: "keys ranked", Verified: int(sum[0]) == testArraySize*maxIterations+size}
	if rank == 0 {
		err = res.Print(out)
	}
	return res, err
}

// exchange drives one ranker through the iterations, doing the collectives
// between its phases.
type exchange struct {
	c      comm
	r      *ranker
	totals []int32 // summed bucket sizes and test keys
	recv   []int32 // the keys received, reused across iterations
	// Reused across iterations too, so that an iteration allocates
	// nothing: the plan, the counts sent and received (as Alltoall's int32
	// and Alltoallv's int) and the offsets of the blocks received.
	pl                       plan
	sendCounts, recvCounts32 []int32
	recvCounts, recvDispls   []int

	done, passed int // iterations done and checks passed, when restored from a checkpoint
}

// timed runs the timed iterations, printing any partial verification
// failure, and returns the checks passed and the slowest rank's seconds.
func (x *exchange) timed(ctx context.Context, out io.Writer) (int, float64, error) {
	if err := x.c.Barrier(ctx); err != nil {
		return 0, 0, fmt.Errorf("barrier: %w", err)
	}
	var timer npb.Timer
	timer.Start()
	passed := x.passed
	for it := x.done + 1; it <= maxIterations; it++ {
		n, failures, err := x.iterate(ctx, it)
		if err != nil {
			return 0, 0, err
		}
		passed += n
		printLines(out, failures)
		if err := x.checkpoint(ctx, it, passed); err != nil {
			return 0, 0, err
		}
	}
	timer.Stop()
	secs := []float64{timer.Seconds()}
	if err := x.c.AllreduceMaxFloat64(ctx, secs); err != nil {
		return 0, 0, fmt.Errorf("reduce time: %w", err)
	}
	return passed, secs[0], nil
}

// iterate is one ranking, NPB's rank(it): bucket the keys, sum the bucket
// sizes over all ranks, agree on which buckets each rank takes, exchange
// the counts and then the keys, and rank them.
func (x *exchange) iterate(ctx context.Context, it int) (int, []string, error) {
	r, size := x.r, x.c.Size()
	local := r.bucketize(it)
	copy(x.totals, local)
	if err := x.c.AllreduceSumInt32(ctx, x.totals); err != nil {
		return 0, nil, fmt.Errorf("iteration %d: sum bucket sizes: %w", it, err)
	}
	x.pl.fill(x.totals, local[:r.p.buckets()], size, r.avg)
	pl := &x.pl
	x.sendCounts = resize(x.sendCounts, size)
	for j, n := range pl.sendCounts {
		x.sendCounts[j] = int32(n)
	}
	x.recvCounts32 = resize(x.recvCounts32, size)
	if err := x.c.Alltoall(ctx, x.sendCounts, x.recvCounts32); err != nil {
		return 0, nil, fmt.Errorf("iteration %d: exchange counts: %w", it, err)
	}
	x.recvCounts = resize(x.recvCounts, size)
	total := 0
	for j, n := range x.recvCounts32 {
		if n < 0 {
			return 0, nil, fmt.Errorf("iteration %d: rank %d announces %d keys", it, j, n)
		}
		x.recvCounts[j] = int(n)
		total += int(n)
	}
	x.recvDispls = fillDispls(resize(x.recvDispls, size), x.recvCounts)
	if cap(x.recv) < total {
		// With room to spare, as NPB's key_buff2 (3/2 of a rank's keys):
		// the keys a rank receives change a little every iteration, and
		// a buffer made to measure was made anew nearly every time, its
		// pages faulted in again during the exchange (rank 0 spent a
		// millisecond an iteration so on 4 ranks).
		x.recv = make([]int32, total, max(total, int(3*r.avg/2)))
	}
	x.recv = x.recv[:total]
	if err := x.c.Alltoallv(ctx, r.grouped, pl.sendCounts, pl.sendDispls, x.recv, x.recvCounts, x.recvDispls); err != nil {
		return 0, nil, fmt.Errorf("iteration %d: exchange keys: %w", it, err)
	}
	n, failures := r.rankKeys(it, x.totals, *pl, x.recv)
	return n, failures, nil
}

// fullVerify sorts this rank's keys by their ranks and counts those out of
// order, including against the largest key of the ranks below, which each
// rank passes to the next (a rank without keys passes on what it got).
func fullVerify(ctx context.Context, c comm, r *ranker) (int, error) {
	sorted := r.sortedKeys()
	rank, size := c.Rank(), c.Size()
	// msg is {1, largest key below} or {0, 0} when no rank below has keys.
	msg := make([]int32, 2)
	recv := func() error {
		if err := c.RecvInt32(ctx, rank-1, boundaryTag, msg); err != nil {
			return fmt.Errorf("full verify: receive from rank %d: %w", rank-1, err)
		}
		return nil
	}
	if rank > 0 && len(sorted) == 0 {
		if err := recv(); err != nil {
			return 0, err
		}
	}
	if rank < size-1 {
		out := msg
		if len(sorted) > 0 {
			out = []int32{1, sorted[len(sorted)-1]}
		}
		if err := c.SendInt32(ctx, rank+1, boundaryTag, out); err != nil {
			return 0, fmt.Errorf("full verify: send to rank %d: %w", rank+1, err)
		}
	}
	if rank > 0 && len(sorted) > 0 {
		if err := recv(); err != nil {
			return 0, err
		}
	}
	return outOfOrder(sorted, msg[1], msg[0] == 1) + r.stray, nil
}

func printLines(w io.Writer, lines []string) {
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
