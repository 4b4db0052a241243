package npb

import (
	"context"
	"fmt"
	"os"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// Comm is every call the NPB ports make of MPI. Each benchmark declares the
// subset it uses; Solo and World implement all of it.
type Comm interface {
	Rank() int
	Size() int
	Barrier(ctx context.Context) error
	AllreduceSumInt32(ctx context.Context, v []int32) error
	AllreduceSumFloat64(ctx context.Context, v []float64) error
	AllreduceMaxFloat64(ctx context.Context, v []float64) error
	Alltoall(ctx context.Context, send, recv []int32) error
	Alltoallv(ctx context.Context, send []int32, sendCounts, sendDispls []int, recv []int32, recvCounts, recvDispls []int) error
	SendInt32(ctx context.Context, to, tag int, v []int32) error
	RecvInt32(ctx context.Context, from, tag int, v []int32) error
}

var (
	_ Comm = Solo{}
	_ Comm = World{}
)

// World is an mpi communicator seen through Comm. The mpi library's calls
// take no context (they return an error when the job fails); World checks
// the context before each call, so a cancelled run stops at the next one.
type World struct{ C *mpi.Comm }

// Rank is this process's rank.
func (w World) Rank() int { return w.C.Rank() }

// Size is the number of ranks.
func (w World) Size() int { return w.C.Size() }

// Barrier waits for every rank.
func (w World) Barrier(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return w.C.Barrier()
}

// AllreduceSumInt32 sums v over all ranks, in place.
func (w World) AllreduceSumInt32(ctx context.Context, v []int32) error {
	return allreduce(ctx, w.C, v, mpi.Sum[int32])
}

// AllreduceSumFloat64 sums v over all ranks, in place.
func (w World) AllreduceSumFloat64(ctx context.Context, v []float64) error {
	return allreduce(ctx, w.C, v, mpi.Sum[float64])
}

// AllreduceMaxFloat64 takes the maximum of v over all ranks, in place.
func (w World) AllreduceMaxFloat64(ctx context.Context, v []float64) error {
	return allreduce(ctx, w.C, v, mpi.Max[float64])
}

func allreduce[T mpi.Elem](ctx context.Context, c *mpi.Comm, v []T, op mpi.Op[T]) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return mpi.Allreduce(c, v, v, op)
}

// Alltoall sends send[j] to rank j and receives rank j's value in recv[j].
func (w World) Alltoall(ctx context.Context, send, recv []int32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return mpi.Alltoall(w.C, send, recv)
}

// Alltoallv is MPI_Alltoallv on int32 blocks.
func (w World) Alltoallv(ctx context.Context, send []int32, sendCounts, sendDispls []int, recv []int32, recvCounts, recvDispls []int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return mpi.Alltoallv(w.C, send, sendCounts, sendDispls, recv, recvCounts, recvDispls)
}

// SendInt32 sends v to rank to with tag.
func (w World) SendInt32(ctx context.Context, to, tag int, v []int32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return mpi.Send(w.C, v, to, tag)
}

// RecvInt32 receives exactly len(v) values from rank from with tag.
func (w World) RecvInt32(ctx context.Context, from, tag int, v []int32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	st, err := mpi.Recv(w.C, v, from, tag)
	if err != nil {
		return err
	}
	if st.Count != len(v) {
		return fmt.Errorf("received %d values from rank %d, want %d", st.Count, from, len(v))
	}
	return nil
}

// Connect joins the job this process is a rank of, through the agent named
// in the environment (mpi.Init). A process started without an agent
// (ZORILLA_SOCKET unset) runs alone as rank 0 of 1, as an MPI program
// started without mpirun does. It returns the communicator and a function
// to call at the end with the run's error: it finalizes the session, or
// aborts the job when the run failed.
func Connect(ctx context.Context) (Comm, func(error) error, error) {
	if _, ok := os.LookupEnv(mpi.EnvSocket); !ok {
		return Solo{}, func(error) error { return nil }, nil
	}
	if err := mpi.Init(ctx); err != nil {
		return nil, nil, fmt.Errorf("join the job: %w", err)
	}
	done := func(err error) error {
		if err != nil {
			return mpi.Abort(1)
		}
		return mpi.Finalize()
	}
	return World{mpi.World()}, done, nil
}
