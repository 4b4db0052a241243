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
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
)

func main() { os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr)) }

// realMain runs the program and returns its exit status.
func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: is CLASS   (CLASS is S, W, A or B)")
		return 2
	}
	p, err := paramsFor(args[0])
	if err != nil {
		fmt.Fprintln(stderr, "is:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, done, err := npb.Connect(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "is:", err)
		return 1
	}
	res, err := run(ctx, c, p, stdout)
	if derr := done(err); err == nil {
		err = derr
	}
	if err != nil {
		fmt.Fprintln(stderr, "is:", err)
		return 1
	}
	if !res.Verified {
		return 1
	}
	return 0
}
