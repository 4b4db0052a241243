package npb

import (
	"context"
	"errors"
	"fmt"
)

// ErrSolo is returned by Solo for a call naming a rank other than 0.
var ErrSolo = errors.New("npb: solo run has only rank 0")

// Solo is the communicator of a run on one rank, without an agent: every
// collective over one rank leaves the data as it is (or copies it from the
// send to the receive buffer), and there is no one to send to. It lets the
// benchmarks run, and be tested, as one plain process.
type Solo struct{}

// Rank is always 0.
func (Solo) Rank() int { return 0 }

// Size is always 1.
func (Solo) Size() int { return 1 }

// Barrier returns at once, or the context's error.
func (Solo) Barrier(ctx context.Context) error { return ctx.Err() }

// AllreduceSumInt32 leaves v as it is: the sum over one rank.
func (Solo) AllreduceSumInt32(ctx context.Context, v []int32) error { return ctx.Err() }

// AllreduceSumFloat64 leaves v as it is.
func (Solo) AllreduceSumFloat64(ctx context.Context, v []float64) error { return ctx.Err() }

// AllreduceMaxFloat64 leaves v as it is.
func (Solo) AllreduceMaxFloat64(ctx context.Context, v []float64) error { return ctx.Err() }

// Alltoall copies the one value of send to recv.
func (Solo) Alltoall(ctx context.Context, send, recv []int32) error {
	if len(send) != 1 || len(recv) != 1 {
		return fmt.Errorf("alltoall of %d to %d values on one rank: %w", len(send), len(recv), ErrSolo)
	}
	recv[0] = send[0]
	return ctx.Err()
}

// Alltoallv copies rank 0's block of send to its block of recv.
func (Solo) Alltoallv(ctx context.Context, send []int32, sendCounts, sendDispls []int, recv []int32, recvCounts, recvDispls []int) error {
	if len(sendCounts) != 1 || len(recvCounts) != 1 || sendCounts[0] != recvCounts[0] {
		return fmt.Errorf("alltoallv of counts %v to %v on one rank: %w", sendCounts, recvCounts, ErrSolo)
	}
	n := sendCounts[0]
	copy(recv[recvDispls[0]:recvDispls[0]+n], send[sendDispls[0]:sendDispls[0]+n])
	return ctx.Err()
}

// SendInt32 fails: there is no other rank.
func (Solo) SendInt32(_ context.Context, to, _ int, _ []int32) error {
	return fmt.Errorf("send to rank %d: %w", to, ErrSolo)
}

// RecvInt32 fails: there is no other rank.
func (Solo) RecvInt32(_ context.Context, from, _ int, _ []int32) error {
	return fmt.Errorf("receive from rank %d: %w", from, ErrSolo)
}
