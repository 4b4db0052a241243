// Command heat is an iterative stencil that checkpoints: the explicit heat
// equation on a line of cells, split in blocks over the ranks. Each step
// exchanges one halo cell with each neighbour, updates the block, and
// takes an Allreduce (the largest temperature, folded into a trace), then
// calls Comm.Checkpoint, so that `zorilla submit --checkpoint-every D`
// decides how often a checkpoint is really taken. A job restarted from a
// checkpoint goes on from the step it saved. At the end each rank computes
// its own cells serially (with a margin of STEPS cells on each side, so
// the result is exact) and checks both agree bit for bit; the ranks reduce
// their verdicts, hash the field in order from rank to rank, and rank 0
// prints "heat OK <checksum>". No rank ever holds the whole field: a
// rank's memory is its part, about 32 B a cell.
//
//	go build -o heat ./examples/heat
//	zorilla submit -n 4 --checkpoint-every 2s ./heat 2000 5
//	zorilla submit -n 2:8 --checkpoint-every 2s ./heat 2000 5   # malleable
//
// Malleable, the job may restart at another size from a checkpoint: each
// new rank reads the old ranks' blocks that overlap its own
// (mpi.Session.RestoredRank), and the result is the same bit for bit.
// Usage: heat STEPS [MS_PER_STEP [CELLS [US_PER_CELL]]]: MS_PER_STEP
// pauses every step (so tests can kill it mid-run; default 0), CELLS is
// the line's length (default 4096), and US_PER_CELL stands for a costlier
// physics: each rank sleeps that many microseconds per cell it holds at
// every step, so a step takes less time on more ranks (default 0). It exits 2 on a usage error, 1 when the job fails or the
// check does.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/zorilla-p2p/zorilla/mpi"
)

func main() { os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr)) }

// realMain runs one rank and returns its exit status.
func realMain(args []string, stdout, stderr io.Writer) int {
	p, err := parseArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, "heat:", err)
		fmt.Fprintln(stderr, "usage: heat STEPS [MS_PER_STEP [CELLS [US_PER_CELL]]]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mpi.Init(ctx); err != nil {
		fmt.Fprintln(stderr, "heat:", err)
		return 1
	}
	c := mpi.World()
	if err := run(ctx, c, p, stdout); err != nil {
		fmt.Fprintf(stderr, "heat: rank %d: %v\n", c.Rank(), err)
		_ = mpi.Abort(1)
		return 1
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(stderr, "heat:", err)
		return 1
	}
	return 0
}

// params are the command's arguments.
type params struct {
	steps int
	pause int // milliseconds per step
	cells int
	work  int // microseconds of work per cell held, per step (spent sleeping)
}

func parseArgs(args []string) (params, error) {
	p := params{pause: 0, cells: 4096}
	if len(args) < 1 || len(args) > 4 {
		return p, fmt.Errorf("one to four arguments, got %d", len(args))
	}
	dst := []*int{&p.steps, &p.pause, &p.cells, &p.work}
	lows := []int{1, 0, 1, 0}
	for i, a := range args {
		n, err := strconv.Atoi(a)
		if err != nil || n < lows[i] || n > 1<<30 {
			return p, fmt.Errorf("argument %d: a whole number from %d, got %q", i+1, lows[i], a)
		}
		*dst[i] = n
	}
	return p, nil
}
