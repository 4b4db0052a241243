// Command is is the NAS Parallel Benchmarks' IS kernel (integer sort, NPB
// 3.4) on Zorilla's MPI library: every rank generates its share of 2^n
// keys, and ten times over the ranks bucket their keys, agree on which
// buckets each rank ranks (Allreduce), exchange counts (Alltoall) and keys
// (Alltoallv), and rank them. NPB's partial verification checks five
// ranks per iteration and the full verification checks that the keys end
// sorted across ranks.
//
// Usage: is CLASS, with CLASS one of S, W, A, B; for example
//
//	zorilla submit -n 4 ./is A
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
	return npb.Main("is", args, stdout, stderr, paramsFor,
		func(ctx context.Context, c npb.Comm, p params, out io.Writer) (npb.Results, error) {
			return run(ctx, c, p, out)
		})
}
