// Command pingpong measures point-to-point performance between ranks 0 and
// 1 the way NetPIPE does: for message sizes from 1 byte to MAX bytes
// (powers of two), it bounces a message back and forth enough times to
// last about a tenth of a second, and rank 0 prints the one-way latency
// (half a round trip) and the bandwidth for each size. Ranks beyond 1 only
// wait. Place the two ranks on two agents to measure the network path:
//
//	go build -o pingpong ./examples/pingpong
//	zorilla submit -n 2 ./pingpong 8388608
//
// Usage: pingpong [MAX] (default 8 MiB). It exits 2 on a usage error, 1
// when the job fails.
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

const (
	defaultMax = 8 << 20
	maxMax     = 1 << 30 // one message of 1 GiB is plenty
	// perSize is how long each size is measured; the count of round trips
	// for the next size is chosen from the last one's time.
	perSize = 100 * time.Millisecond
	tag     = 1
)

func main() { os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr)) }

// realMain runs one rank and returns its exit status.
func realMain(args []string, stdout, stderr io.Writer) int {
	maxSize, err := parseArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, "pingpong:", err)
		fmt.Fprintln(stderr, "usage: pingpong [MAX]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mpi.Init(ctx); err != nil {
		fmt.Fprintln(stderr, "pingpong:", err)
		return 1
	}
	if err := run(mpi.World(), maxSize, stdout); err != nil {
		fmt.Fprintln(stderr, "pingpong:", err)
		_ = mpi.Abort(1)
		return 1
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(stderr, "pingpong:", err)
		return 1
	}
	return 0
}

// parseArgs reads the optional largest message size.
func parseArgs(args []string) (int, error) {
	switch len(args) {
	case 0:
		return defaultMax, nil
	case 1:
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 1 || n > maxMax {
			return 0, fmt.Errorf("MAX must be a whole number of bytes in 1..%d, got %q", maxMax, args[0])
		}
		return n, nil
	}
	return 0, fmt.Errorf("at most one argument, got %d", len(args))
}

// sizes are the message sizes measured: powers of two up to max, and max.
func sizes(max int) []int {
	var out []int
	for s := 1; s < max; s *= 2 {
		out = append(out, s)
	}
	return append(out, max)
}

// run is one rank's part: ranks 0 and 1 bounce messages, others wait.
func run(c *mpi.Comm, maxSize int, w io.Writer) error {
	if c.Size() < 2 {
		return fmt.Errorf("needs 2 ranks, got %d", c.Size())
	}
	if c.Rank() == 0 {
		fmt.Fprintf(w, "%12s %10s %14s %12s\n", "bytes", "rounds", "latency_us", "MB/s")
	}
	buf := make([]byte, maxSize)
	reps := []int64{16}
	for _, size := range sizes(maxSize) {
		if err := mpi.Bcast(c, reps, 0); err != nil { // both sides agree on the count
			return err
		}
		if c.Rank() > 1 {
			continue
		}
		took, err := bounce(c, buf[:size], int(reps[0]))
		if err != nil {
			return fmt.Errorf("%d bytes: %w", size, err)
		}
		if c.Rank() == 0 {
			oneWay := took / time.Duration(2*reps[0])
			fmt.Fprintf(w, "%12d %10d %14.2f %12.2f\n", size, reps[0],
				float64(oneWay.Nanoseconds())/1e3, float64(size)/oneWay.Seconds()/1e6)
			reps[0] = nextReps(reps[0], took)
		}
	}
	return nil
}

// bounce runs reps round trips of msg between ranks 0 and 1.
func bounce(c *mpi.Comm, msg []byte, reps int) (time.Duration, error) {
	other := 1 - c.Rank()
	start := time.Now()
	for i := 0; i < reps; i++ {
		if c.Rank() == 0 {
			if err := mpi.Send(c, msg, other, tag); err != nil {
				return 0, err
			}
		}
		if _, err := mpi.Recv(c, msg, other, tag); err != nil {
			return 0, err
		}
		if c.Rank() == 1 {
			if err := mpi.Send(c, msg, other, tag); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(start), nil
}

// nextReps picks the count of round trips for the next (twice larger) size
// so that it lasts about perSize, at least 4.
func nextReps(reps int64, took time.Duration) int64 {
	if took <= 0 {
		return reps * 2
	}
	per := took / time.Duration(reps)
	n := int64(perSize / (2 * per)) // the next size takes up to twice as long
	return max(4, min(n, 1<<20))
}
