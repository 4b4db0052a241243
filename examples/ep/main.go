// Command ep is the NAS Parallel Benchmarks' EP kernel (embarrassingly
// parallel, NPB 3.4) on Zorilla's MPI library: the ranks share 2^(M-16)
// batches of 2^17 uniform random numbers from NPB's generator, turn them
// into Gaussian pairs by Marsaglia's polar method, count the pairs in
// square annuli and sum the deviates, and one Allreduce adds it all up.
// The sums are checked against NPB's values to a relative error of 1e-8.
//
// Usage: ep CLASS, with CLASS one of S, W, A, B (M = 24, 25, 28, 30); for
// example
//
//	zorilla submit -n 4 ./ep A
//
// It exits with status 1 when verification fails, 2 on a usage error.
package main

import (
	"context"
	"io"
	"os"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
)

func main() { os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr)) }

// realMain runs the program and returns its exit status.
func realMain(args []string, stdout, stderr io.Writer) int {
	return npb.Main("ep", args, stdout, stderr, paramsFor,
		func(ctx context.Context, c npb.Comm, p params, out io.Writer) (npb.Results, error) {
			return run(ctx, c, p, out)
		})
}
