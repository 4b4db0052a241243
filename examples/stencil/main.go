// Command stencil is an iterative MPI program whose every message is
// checked: a 1-D periodic stencil over integers modulo a prime, with a halo
// exchange between neighbours, an Allreduce of the sum, and optionally an
// Alltoall of large blocks, each iteration. Every rank also runs the whole
// computation serially (it is small) and checks each value it receives,
// and the final state, against it; so a lost, repeated or corrupted
// message makes the run fail instead of printing a wrong answer. It is the
// test program of replicated jobs that lose hosts mid-run.
//
//	go build -o stencil ./examples/stencil
//	zorilla submit -n 4 -r 2 ./stencil -iters 200 -block 4194304
//
// Usage: stencil [-iters N] [-points P] [-block BYTES] [-delay D]. It exits 2
// on a usage error, 1 when the job fails or a check fails.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
)

func main() { os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr)) }

// params are the command-line settings.
type params struct {
	iters  int           // iterations
	points int           // points per rank
	block  int           // bytes each rank sends each other rank per iteration (0: no Alltoall)
	delay  time.Duration // pause per iteration, so that a test can act mid-run
}

func parseArgs(args []string, stderr io.Writer) (params, error) {
	fs := flag.NewFlagSet("stencil", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var p params
	fs.IntVar(&p.iters, "iters", 100, "iterations")
	fs.IntVar(&p.points, "points", 64, "points per rank")
	fs.IntVar(&p.block, "block", 0, "bytes each rank sends every other rank per iteration (0: no Alltoall)")
	fs.DurationVar(&p.delay, "delay", 0, "pause per iteration")
	if err := fs.Parse(args); err != nil {
		return p, err
	}
	switch {
	case fs.NArg() != 0:
		return p, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case p.iters < 1 || p.iters > 1e7:
		return p, fmt.Errorf("-iters %d outside 1..10000000", p.iters)
	case p.points < 1 || p.points > 1<<20:
		return p, fmt.Errorf("-points %d outside 1..1048576", p.points)
	case p.block < 0 || p.block > 64<<20:
		return p, fmt.Errorf("-block %d outside 0..64 MiB", p.block)
	case p.delay < 0 || p.delay > time.Minute:
		return p, fmt.Errorf("-delay %v outside 0..1m", p.delay)
	}
	return p, nil
}

// realMain runs one rank and returns its exit status.
func realMain(args []string, stdout, stderr io.Writer) int {
	p, err := parseArgs(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "stencil:", err)
		}
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mpi.Init(ctx); err != nil {
		fmt.Fprintln(stderr, "stencil:", err)
		return 1
	}
	if mpi.World().Rank() == 0 {
		fmt.Fprintf(stdout, "stencil: %d ranks started\n", mpi.World().Size())
	}
	sum, err := Run(mpi.World(), p)
	if err != nil {
		fmt.Fprintf(stderr, "stencil: rank %d: %v\n", mpi.World().Rank(), err)
		_ = mpi.Abort(1)
		return 1
	}
	if mpi.World().Rank() == 0 {
		fmt.Fprintf(stdout, "stencil: %d ranks, %d iterations, %d points, block %d: checksum %d verified\n",
			mpi.World().Size(), p.iters, p.points*mpi.World().Size(), p.block, sum)
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(stderr, "stencil:", err)
		return 1
	}
	return 0
}
