// Command pi computes π by numerical integration on every rank of a job,
// as MPICH's classic cpi example does: π = ∫₀¹ 4/(1+x²) dx by the midpoint
// rule over INTERVALS strips, rank r taking strips r, r+size, r+2·size, ...;
// Reduce sums the partial sums at rank 0, which prints the result and its
// error. Every rank first says where it runs. Run it through an agent:
//
//	go build -o pi ./examples/pi
//	zorilla submit -n 8 ./pi 10000000
//
// Usage: pi [INTERVALS] (default 10000000). It exits 2 on a usage error,
// 1 when the job fails.
package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// defaultIntervals gives an error near 1e-15 (the midpoint rule's error
// falls as 1/n²) in well under a second on one core.
const defaultIntervals = 10_000_000

// maxIntervals keeps a typo from running for hours.
const maxIntervals = 1 << 40

// envAgent is the variable in which the agent names itself (its peer ID)
// to the processes it starts.
const envAgent = "ZORILLA_AGENT"

func main() { os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr)) }

// realMain runs one rank and returns its exit status.
func realMain(args []string, stdout, stderr io.Writer) int {
	n, err := parseArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, "pi:", err)
		fmt.Fprintln(stderr, "usage: pi [INTERVALS]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mpi.Init(ctx); err != nil {
		fmt.Fprintln(stderr, "pi:", err)
		return 1
	}
	host, _ := os.Hostname()
	if err := run(mpi.World(), n, host, short(os.Getenv(envAgent)), stdout); err != nil {
		fmt.Fprintln(stderr, "pi:", err)
		_ = mpi.Abort(1)
		return 1
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(stderr, "pi:", err)
		return 1
	}
	return 0
}

// parseArgs reads the optional number of intervals.
func parseArgs(args []string) (int64, error) {
	switch len(args) {
	case 0:
		return defaultIntervals, nil
	case 1:
		n, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil || n < 1 || n > maxIntervals {
			return 0, fmt.Errorf("INTERVALS must be a whole number in 1..%d, got %q", int64(maxIntervals), args[0])
		}
		return n, nil
	}
	return 0, fmt.Errorf("at most one argument, got %d", len(args))
}

// run is one rank's work: its share of the integral, then the sum at rank 0.
func run(c *mpi.Comm, n int64, host, agent string, w io.Writer) error {
	start := time.Now()
	part := partialSum(n, c.Rank(), c.Size())
	fmt.Fprintf(w, "rank %d of %d on %s (agent %s): partial sum %.12f\n", c.Rank(), c.Size(), host, agent, part)
	sum := []float64{0}
	if err := mpi.Reduce(c, []float64{part}, sum, mpi.Sum[float64], 0); err != nil {
		return fmt.Errorf("reduce: %w", err)
	}
	if c.Rank() == 0 {
		fmt.Fprintf(w, "pi is approximately %.16f, error %.2e (%d intervals on %d ranks, %v)\n",
			sum[0], math.Abs(sum[0]-math.Pi), n, c.Size(), time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// partialSum is rank's share of the midpoint rule for ∫₀¹ 4/(1+x²) dx over
// n strips: strips rank, rank+size, ... The shares of ranks 0..size-1 add up
// to the whole sum.
func partialSum(n int64, rank, size int) float64 {
	h := 1 / float64(n)
	var s float64
	for i := int64(rank); i < n; i += int64(size) {
		x := h * (float64(i) + 0.5)
		s += 4 / (1 + x*x)
	}
	return h * s
}

// short abbreviates a peer ID as libp2p does (first two characters, a
// star, the last six), which is how `zorilla` prints agents too.
func short(id string) string {
	if len(id) <= 10 {
		return id
	}
	return id[:2] + "*" + id[len(id)-6:]
}
