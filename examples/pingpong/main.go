// Command pingpong measures point-to-point performance between ranks 0 and
// 1 the way NetPIPE does: for message sizes from 1 byte to MAX bytes
// (powers of two), it bounces a message back and forth enough times to
// last about a tenth of a second, three times over, and rank 0 prints the
// one-way latency (half a round trip) and the bandwidth of the fastest of
// the three for each size. Ranks beyond 1 only
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

	"github.com/zorilla-p2p/zorilla/internal/pingpong"
	"github.com/zorilla-p2p/zorilla/mpi"
)

const (
	defaultMax = 8 << 20
	tag        = 1
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
		if err != nil || n < 1 || n > pingpong.MaxSize {
			return 0, fmt.Errorf("MAX must be a whole number of bytes in 1..%d, got %q", pingpong.MaxSize, args[0])
		}
		return n, nil
	}
	return 0, fmt.Errorf("at most one argument, got %d", len(args))
}

// run is one rank's part: ranks 0 and 1 bounce messages, others wait.
func run(c *mpi.Comm, maxSize int, w io.Writer) error {
	if c.Size() < 2 {
		return fmt.Errorf("needs 2 ranks, got %d", c.Size())
	}
	if c.Rank() == 0 {
		if err := pingpong.WriteHeader(w); err != nil {
			return err
		}
	}
	buf := make([]byte, maxSize)
	reps := []int64{pingpong.FirstReps}
	for _, size := range pingpong.Sizes(maxSize) {
		if err := mpi.Bcast(c, reps, 0); err != nil { // both sides agree on the count
			return err
		}
		if c.Rank() > 1 {
			continue
		}
		took, err := pingpong.Best(func() (time.Duration, error) { return bounce(c, buf[:size], int(reps[0])) })
		if err != nil {
			return fmt.Errorf("%d bytes: %w", size, err)
		}
		if c.Rank() == 0 {
			if err := pingpong.WriteRow(w, pingpong.Result{Size: size, Reps: reps[0], Took: took}.Row()); err != nil {
				return err
			}
			reps[0] = pingpong.NextReps(reps[0], took)
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
