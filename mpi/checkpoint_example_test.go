package mpi_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// An iterative rank program that checkpoints between iterations: after a
// restart it goes on from the iteration it saved. Run it with
// zorilla submit --checkpoint-every 5m; the call takes a checkpoint only
// when five minutes have passed since the last one.
func ExampleComm_Checkpoint() {
	ctx := context.Background()
	if err := mpi.Init(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := mpi.World()
	var it, sum int64
	if r, ok := mpi.Restored(); ok { // restarted: read back what save wrote
		var st [2]int64
		if err := binary.Read(r, binary.LittleEndian, &st); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		it, sum = st[0], st[1]
	}
	for ; it < 1000; it++ {
		part := []int64{it * int64(c.Rank())}
		total := []int64{0}
		if err := mpi.Allreduce(c, part, total, mpi.Sum); err != nil {
			os.Exit(1)
		}
		sum += total[0]
		next := it + 1 // the state after this iteration
		if _, err := c.Checkpoint(ctx, func(w io.Writer) error {
			return binary.Write(w, binary.LittleEndian, [2]int64{next, sum})
		}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := mpi.Finalize(); err != nil {
		os.Exit(1)
	}
}
