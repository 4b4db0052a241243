// Command ring passes a token around the ranks of a job with Send and
// Recv: rank 0 starts it at 0, every rank adds its own rank number and
// passes it to the next, for LAPS laps. Rank 0 then checks the token is
// LAPS × (0+1+…+(size-1)) and prints it with the time one lap took.
//
//	go build -o ring ./examples/ring
//	zorilla submit -n 8 ./ring 1000
//
// Usage: ring [LAPS] (default 100). It exits 2 on a usage error, 1 when the
// job fails or the token is wrong.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// defaultLaps is enough laps for a per-lap time that is not all noise.
const defaultLaps = 100

// tag of the token messages.
const tag = 1

func main() { os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr)) }

// realMain runs one rank and returns its exit status.
func realMain(args []string, stdout, stderr io.Writer) int {
	laps, err := parseArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, "ring:", err)
		fmt.Fprintln(stderr, "usage: ring [LAPS]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mpi.Init(ctx); err != nil {
		fmt.Fprintln(stderr, "ring:", err)
		return 1
	}
	if err := run(mpi.World(), laps, stdout); err != nil {
		fmt.Fprintf(stderr, "ring: rank %d: %v\n", mpi.World().Rank(), err)
		_ = mpi.Abort(1)
		return 1
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(stderr, "ring:", err)
		return 1
	}
	return 0
}

// parseArgs reads the optional number of laps.
func parseArgs(args []string) (int64, error) {
	switch len(args) {
	case 0:
		return defaultLaps, nil
	case 1:
		n, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("LAPS must be a whole number from 1, got %q", args[0])
		}
		return n, nil
	}
	return 0, fmt.Errorf("at most one argument, got %d", len(args))
}

// run is one rank's part of the ring.
func run(c *mpi.Comm, laps int64, w io.Writer) error {
	n, me := c.Size(), c.Rank()
	next, prev := (me+1)%n, (me-1+n)%n
	token := []int64{0}
	start := time.Now()
	for lap := int64(0); lap < laps; lap++ {
		if me != 0 {
			if _, err := mpi.Recv(c, token, prev, tag); err != nil {
				return fmt.Errorf("lap %d: %w", lap, err)
			}
		}
		token[0] += int64(me)
		if err := mpi.Send(c, token, next, tag); err != nil {
			return fmt.Errorf("lap %d: %w", lap, err)
		}
		if me == 0 {
			if _, err := mpi.Recv(c, token, prev, tag); err != nil {
				return fmt.Errorf("lap %d: %w", lap, err)
			}
		}
	}
	if me != 0 {
		return nil
	}
	want := laps * int64(n*(n-1)/2)
	perLap := time.Since(start) / time.Duration(laps)
	fmt.Fprintf(w, "ring: %d ranks, %d laps, token %d, %v per lap\n", n, laps, token[0], perLap)
	if token[0] != want {
		return fmt.Errorf("token %d after %d laps, want %d", token[0], laps, want)
	}
	return nil
}
