package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
)

// Checkpoints between the timed iterations. The keys change
// only where an iteration sets its two keys, so the state saved is the
// iterations done and the checks passed; a restart generates the keys
// again and sets what the iterations done had set.

// checkpoint offers a checkpoint after iteration it, when the
// communicator keeps them.
func (x *exchange) checkpoint(ctx context.Context, it, passed int) error {
	ck, ok := x.c.(npb.Checkpointer)
	if !ok {
		return nil
	}
	_, err := ck.Checkpoint(ctx, func(w io.Writer) error {
		return binary.Write(w, binary.LittleEndian, [2]int64{int64(it), int64(passed)})
	})
	if err != nil {
		return fmt.Errorf("checkpoint after iteration %d: %w", it, err)
	}
	return nil
}

// restore takes the state of the checkpoint this process restarts from,
// if any, and reports whether there was one.
func (x *exchange) restore() (bool, error) {
	ck, ok := x.c.(npb.Checkpointer)
	if !ok {
		return false, nil
	}
	r, ok := ck.Restored()
	if !ok {
		return false, nil
	}
	var v [2]int64
	if err := binary.Read(r, binary.LittleEndian, &v); err != nil {
		return false, fmt.Errorf("restore: %w", err)
	}
	if v[0] < 1 || v[0] > maxIterations || v[1] < 0 || v[1] > v[0]*testArraySize {
		return false, fmt.Errorf("restore: %d iterations done, %d checks passed", v[0], v[1])
	}
	x.done, x.passed = int(v[0]), int(v[1])
	for it := 1; it <= x.done; it++ {
		x.r.setIterationKeys(it)
	}
	return true, nil
}
