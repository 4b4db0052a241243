package mpi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
)

// ranks runs fn as every rank of an n-rank job spread over the test agents
// (each rank a goroutine here; a process in a real job) and prints any
// error but the job's failure. The examples below are the bodies of such
// rank programs.
func ranks(n int, fn func(c *mpi.Comm) error) {
	j, err := cluster.AddJob(n, mpitest.RoundRobin(len(cluster.Hosts)))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, err := range j.Run(ctx, fn) {
		// after an Abort, Finalize reports the failure: that is the point
		if err != nil && !errors.Is(err, mpi.ErrJobFailed) && !errors.Is(err, mpi.ErrFinalized) {
			fmt.Println(err)
		}
	}
}

// A complete rank program: Init from the environment the agent sets, work
// on the world communicator, Finalize. Run it with zorilla submit.
func ExampleInit() {
	ctx := context.Background()
	if err := mpi.Init(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := mpi.World()
	fmt.Printf("rank %d of %d\n", c.Rank(), c.Size())
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Send and Recv pass a token around a ring; rank 0 sees the sum of all
// ranks when it comes back.
func ExampleSend() {
	ranks(4, func(c *mpi.Comm) error {
		next, prev := (c.Rank()+1)%c.Size(), (c.Rank()+c.Size()-1)%c.Size()
		token := []int64{0}
		if c.Rank() != 0 {
			if _, err := mpi.Recv(c, token, prev, 0); err != nil {
				return err
			}
		}
		token[0] += int64(c.Rank())
		if err := mpi.Send(c, token, next, 0); err != nil {
			return err
		}
		if c.Rank() == 0 {
			if _, err := mpi.Recv(c, token, prev, 0); err != nil {
				return err
			}
			fmt.Println("token:", token[0])
		}
		return nil
	})
	// Output: token: 6
}

// Recv with AnySource and AnyTag takes messages in the order they arrive;
// the Status says who sent each and with which tag.
func ExampleRecv_wildcards() {
	ranks(3, func(c *mpi.Comm) error {
		if c.Rank() != 0 {
			return mpi.Send(c, []byte("hello"), 0, 10*c.Rank())
		}
		from := map[int]int{}
		buf := make([]byte, 16)
		for i := 1; i < c.Size(); i++ {
			st, err := mpi.Recv(c, buf, mpi.AnySource, mpi.AnyTag)
			if err != nil {
				return err
			}
			from[st.Source] = st.Tag
		}
		fmt.Println("tags by source:", from)
		return nil
	})
	// Output: tags by source: map[1:10 2:20]
}

// Isend and Irecv start transfers and return at once; Waitall waits for
// them, here an exchange of halos with both neighbours.
func ExampleIrecv() {
	ranks(4, func(c *mpi.Comm) error {
		n, me := c.Size(), c.Rank()
		left, right := (me+n-1)%n, (me+1)%n
		fromLeft, fromRight := make([]float64, 1), make([]float64, 1)
		reqs := []*mpi.Request{
			mpi.Irecv(c, fromLeft, left, 0),
			mpi.Irecv(c, fromRight, right, 0),
			mpi.Isend(c, []float64{float64(me)}, left, 0),
			mpi.Isend(c, []float64{float64(me)}, right, 0),
		}
		if err := mpi.Waitall(reqs...); err != nil {
			return err
		}
		if me == 0 {
			fmt.Println("rank 0 neighbours:", fromLeft[0], fromRight[0])
		}
		return nil
	})
	// Output: rank 0 neighbours: 3 1
}

// Probe tells the size of a message before receiving it.
func ExampleComm_Probe() {
	ranks(2, func(c *mpi.Comm) error {
		if c.Rank() == 1 {
			return mpi.Send(c, []int32{1, 2, 3, 4, 5}, 0, 7)
		}
		st, err := c.Probe(1, mpi.AnyTag)
		if err != nil {
			return err
		}
		buf := make([]int32, st.Bytes/4)
		if _, err := mpi.Recv(c, buf, st.Source, st.Tag); err != nil {
			return err
		}
		fmt.Println(st.Bytes, "bytes:", buf)
		return nil
	})
	// Output: 20 bytes: [1 2 3 4 5]
}

// Allreduce leaves the combined value on every rank: here the sum and the
// maximum of the ranks' numbers.
func ExampleAllreduce() {
	ranks(5, func(c *mpi.Comm) error {
		x := []float64{float64(c.Rank() + 1)}
		sum, top := make([]float64, 1), make([]float64, 1)
		if err := mpi.Allreduce(c, x, sum, mpi.Sum); err != nil {
			return err
		}
		if err := mpi.Allreduce(c, x, top, mpi.Max); err != nil {
			return err
		}
		if c.Rank() == 4 {
			fmt.Println("sum", sum[0], "max", top[0])
		}
		return nil
	})
	// Output: sum 15 max 5
}

// Reduce also takes a user function (associative and commutative).
func ExampleReduce() {
	ranks(4, func(c *mpi.Comm) error {
		bits := []uint64{1 << c.Rank()}
		or := func(inout, in []uint64) {
			for i := range inout {
				inout[i] |= in[i]
			}
		}
		all := make([]uint64, 1)
		if err := mpi.Reduce(c, bits, all, or, 0); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Printf("%04b\n", all[0])
		}
		return nil
	})
	// Output: 1111
}

// Bcast copies the root's data to every rank; Gather brings one block
// from every rank to the root, in rank order.
func ExampleBcast() {
	ranks(3, func(c *mpi.Comm) error {
		params := make([]int64, 2)
		if c.Rank() == 0 {
			params[0], params[1] = 100, 7
		}
		if err := mpi.Bcast(c, params, 0); err != nil {
			return err
		}
		mine := []int64{params[0] + int64(c.Rank())*params[1]}
		var all []int64
		if c.Rank() == 0 {
			all = make([]int64, c.Size())
		}
		if err := mpi.Gather(c, mine, all, 0); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println(all)
		}
		return nil
	})
	// Output: [100 107 114]
}

// Scatter hands each rank its block of the root's data; Allgather gives
// everyone everybody's block.
func ExampleScatter() {
	ranks(3, func(c *mpi.Comm) error {
		var work []int32
		if c.Rank() == 0 {
			work = []int32{1, 2, 3, 4, 5, 6}
		}
		mine := make([]int32, 2)
		if err := mpi.Scatter(c, work, mine, 0); err != nil {
			return err
		}
		mine[0] *= 10
		mine[1] *= 10
		all := make([]int32, 6)
		if err := mpi.Allgather(c, mine, all); err != nil {
			return err
		}
		if c.Rank() == 2 {
			fmt.Println(all)
		}
		return nil
	})
	// Output: [10 20 30 40 50 60]
}

// Alltoallv sends a different amount to each rank: here rank i sends i+1
// copies of its rank number to every rank, as a bucket exchange would.
func ExampleAlltoallv() {
	ranks(3, func(c *mpi.Comm) error {
		n, me := c.Size(), c.Rank()
		sendCounts, sendDispls := make([]int, n), make([]int, n)
		var send []int32
		for j := range n {
			sendCounts[j], sendDispls[j] = me+1, len(send)
			for range me + 1 {
				send = append(send, int32(me))
			}
		}
		recvCounts, recvDispls := make([]int, n), make([]int, n)
		total := 0
		for i := range n {
			recvCounts[i], recvDispls[i] = i+1, total
			total += i + 1
		}
		recv := make([]int32, total)
		if err := mpi.Alltoallv(c, send, sendCounts, sendDispls, recv, recvCounts, recvDispls); err != nil {
			return err
		}
		if me == 0 {
			fmt.Println(recv)
		}
		return nil
	})
	// Output: [0 1 1 2 2 2]
}

// A failure is an error, not a hang: when a rank aborts, the others'
// blocked calls return a JobError saying who and with which code.
func ExampleSession_Abort() {
	ranks(3, func(c *mpi.Comm) error {
		if c.Rank() == 2 {
			_ = c.Session().Abort(3)
			return nil
		}
		_, err := mpi.Recv(c, make([]byte, 1), mpi.AnySource, mpi.AnyTag)
		var je *mpi.JobError
		if errors.As(err, &je) && c.Rank() == 0 {
			fmt.Println(je.Cause, "by rank", je.Rank, "code", je.Code)
		}
		return nil
	})
	// Output: aborted by rank 2 code 3
}
