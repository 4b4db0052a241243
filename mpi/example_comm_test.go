package mpi_test

import (
	"fmt"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// Split makes one communicator per colour: here the even and the odd
// ranks, each ordered by its rank in the world; rank 5 passes Undefined
// and gets none.
func ExampleComm_Split() {
	ranks(6, func(c *mpi.Comm) error {
		color := c.Rank() % 2
		if c.Rank() == 5 {
			color = mpi.Undefined
		}
		s, err := c.Split(color, c.Rank())
		if err != nil || s == nil {
			return err
		}
		sum := []int32{int32(c.Rank())}
		if err := mpi.Allreduce(s, sum, sum, mpi.Sum[int32]); err != nil {
			return err
		}
		if s.Rank() == 0 {
			fmt.Printf("colour %d: %d ranks, world ranks sum to %d\n", color, s.Size(), sum[0])
		}
		return nil
	})
	// Unordered output:
	// colour 0: 3 ranks, world ranks sum to 6
	// colour 1: 2 ranks, world ranks sum to 4
}

// A library takes a duplicate of the program's communicator, so that its
// messages never match the program's receives, even with wildcards.
func ExampleComm_Dup() {
	ranks(2, func(c *mpi.Comm) error {
		lib, err := c.Dup()
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			if err := mpi.Send(lib, []byte("library"), 1, 0); err != nil {
				return err
			}
			return mpi.Send(c, []byte("program"), 1, 0)
		}
		buf := make([]byte, 7)
		if _, err := mpi.Recv(c, buf, mpi.AnySource, mpi.AnyTag); err != nil {
			return err
		}
		fmt.Println("program's receive got", string(buf))
		return nil
	})
	// Output: program's receive got program
}

// Exscan gives each rank the sum of the counts of the ranks before it:
// where its part starts in a shared output.
func ExampleExscan() {
	ranks(4, func(c *mpi.Comm) error {
		count := []int64{int64(c.Rank() + 1)}
		start := []int64{0} // rank 0 keeps its own: it starts at 0
		if err := mpi.Exscan(c, count, start, mpi.Sum[int64]); err != nil {
			return err
		}
		fmt.Printf("rank %d writes %d items at %d\n", c.Rank(), count[0], start[0])
		return nil
	})
	// Unordered output:
	// rank 0 writes 1 items at 0
	// rank 1 writes 2 items at 1
	// rank 2 writes 3 items at 3
	// rank 3 writes 4 items at 6
}
