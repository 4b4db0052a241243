// Command alltoallv times Alltoallv as NAS IS uses it: every rank sends
// every rank a block of BLOCK int32s, ITER times over, and between two
// calls computes for WORK (passes over its send buffer until WORK has
// passed), so that ranks arrive at each exchange from a busy core as IS's
// do. Every rank checks what it received; rank 0 prints the fastest, the
// median, the 90th percentile and the slowest of its calls. With more
// ranks than cores on one agent it is the exchange that IS's 4 ranks on 2
// cores wait in (BENCHMARKS.md):
//
//	go build -o alltoallv ./examples/alltoallv
//	zorilla demo --agents 1 --procs 4 -n 4 -a concentrate --program ./alltoallv 524288 100 15ms
//
// Usage: alltoallv BLOCK ITER WORK. It exits 2 on a usage error, 1 when
// the job fails or a block arrives wrong.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
	"github.com/zorilla-p2p/zorilla/mpi"
)

func main() { os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr)) }

// params are the command's arguments.
type params struct {
	block, iters int
	work         time.Duration
}

// realMain runs one rank and returns its exit status.
func realMain(args []string, stdout, stderr io.Writer) int {
	p, err := parseArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, "alltoallv:", err)
		fmt.Fprintln(stderr, "usage: alltoallv BLOCK ITER WORK (int32s a block, calls, compute between calls, e.g. 524288 100 15ms)")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mpi.Init(ctx); err != nil {
		fmt.Fprintln(stderr, "alltoallv:", err)
		return 1
	}
	if err := run(ctx, npb.World{C: mpi.World()}, p, stdout); err != nil {
		fmt.Fprintln(stderr, "alltoallv:", err)
		_ = mpi.Abort(1)
		return 1
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(stderr, "alltoallv:", err)
		return 1
	}
	return 0
}

// parseArgs reads BLOCK, ITER and WORK.
func parseArgs(args []string) (params, error) {
	if len(args) != 3 {
		return params{}, fmt.Errorf("want 3 arguments, got %d", len(args))
	}
	block, err := strconv.Atoi(args[0])
	if err != nil || block < 1 || block > 16<<20 {
		return params{}, fmt.Errorf("BLOCK must be a number of int32s in 1..%d, got %q", 16<<20, args[0])
	}
	iters, err := strconv.Atoi(args[1])
	if err != nil || iters < 1 || iters > 100_000 {
		return params{}, fmt.Errorf("ITER must be a number of calls in 1..100000, got %q", args[1])
	}
	work, err := time.ParseDuration(args[2])
	if err != nil || work < 0 || work > time.Minute {
		return params{}, fmt.Errorf("WORK must be a duration in 0..1m, got %q", args[2])
	}
	return params{block, iters, work}, nil
}

// run is one rank's part.
func run(ctx context.Context, c npb.Comm, p params, w io.Writer) error {
	n, me := c.Size(), c.Rank()
	send, recv := make([]int32, p.block*n), make([]int32, p.block*n)
	counts, displs := make([]int, n), make([]int, n)
	for j := range n {
		counts[j], displs[j] = p.block, j*p.block
	}
	took := make([]time.Duration, p.iters)
	for it := range p.iters {
		compute(send, p.work)
		for j := range n { // each block says who sent it to whom, in which call
			send[j*p.block] = value(me, j, it)
		}
		start := time.Now()
		if err := c.Alltoallv(ctx, send, counts, displs, recv, counts, displs); err != nil {
			return fmt.Errorf("call %d: %w", it, err)
		}
		took[it] = time.Since(start)
		for j := range n {
			if got, want := recv[j*p.block], value(j, me, it); got != want {
				return fmt.Errorf("call %d: block from rank %d starts with %#x, want %#x", it, j, got, want)
			}
		}
	}
	if me == 0 {
		slices.Sort(took)
		fmt.Fprintf(w, "alltoallv: %d ranks, %d int32s a block, %d calls, %v of work between: min %v median %v p90 %v max %v\n",
			n, p.block, p.iters, p.work, took[0], took[len(took)/2], took[len(took)*9/10], took[len(took)-1])
	}
	return nil
}

// value marks the block from rank i to rank j in call it.
func value(i, j, it int) int32 { return int32(i<<24 | j<<16 | it&0xffff) }

// compute passes over buf until d has passed (at least once when d > 0).
func compute(buf []int32, d time.Duration) {
	if d <= 0 {
		return
	}
	for start := time.Now(); time.Since(start) < d; {
		for k := range buf {
			buf[k] += int32(k)
		}
	}
}
