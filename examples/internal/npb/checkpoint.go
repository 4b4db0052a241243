package npb

import (
	"context"
	"io"
)

// Checkpointer is what a benchmark that checkpoints needs; World has it,
// Solo (no agent to keep checkpoints) does not.
type Checkpointer interface {
	Checkpoint(ctx context.Context, save func(io.Writer) error) (bool, error)
	Restored() (io.Reader, bool)
}

var _ Checkpointer = World{}

// Checkpoint is mpi's Comm.Checkpoint.
func (w World) Checkpoint(ctx context.Context, save func(io.Writer) error) (bool, error) {
	return w.C.Checkpoint(ctx, save)
}

// Restored is the state this process restarts from, if any.
func (w World) Restored() (io.Reader, bool) { return w.C.Session().Restored() }
