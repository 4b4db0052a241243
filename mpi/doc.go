// Package mpi is the message-passing library that user programs import.
//
// A rank process never opens a network connection: Init connects to the local
// agent over the unix socket named by ZORILLA_SOCKET and introduces itself
// with the job ID, job key, rank, size and replica index from the
// environment (see Options). The agent is the communication daemon: it
// delivers to ranks on the same machine directly and to the others over one
// libp2p stream per remote agent. Init returns only when every rank of the
// job has reached it (the second phase of the two-phase start).
//
// A program:
//
//	if err := mpi.Init(ctx); err != nil { ... }
//	c := mpi.World()
//	sum := []float64{0}
//	err := mpi.Reduce(c, []float64{part(c.Rank(), c.Size())}, sum, mpi.Sum, 0)
//	...
//	err = mpi.Finalize()
//
// Point-to-point: Send, Recv, Isend, Irecv, Sendrecv on slices of any Elem
// type ([]byte, []int32, []int64, []float64, ...), with tags, AnySource and
// AnyTag; Request.Wait, Request.Test, Waitall; Comm.Probe and Comm.Iprobe.
// Messages between a pair with the same tag and communicator are never
// overtaken. Collectives: Comm.Barrier, Bcast, Reduce, Allreduce (Sum, Min,
// Max, Prod or any associative and commutative Op), Gather, Scatter,
// Allgather, Alltoall, Alltoallv — tree, recursive-doubling, Bruck and
// pairwise algorithms, correct for any number of ranks.
//
// Sends are eager: Send returns once the data has been handed to the agent,
// and the library reads everything the agent sends at once, keeping
// unexpected messages in memory, so two ranks sending to each other never
// deadlock. The agents' flow control bounds their own memory.
//
// Failures are errors, never hangs and never panics: when a rank aborts or
// dies, an agent is lost, or the job is cancelled, every blocked and later
// call of every rank returns a *JobError (errors.Is(err, ErrJobFailed)).
// The library never prints and never exits the process; Abort tells the job
// to end and the program then exits.
//
// Replicated jobs (zorilla submit -r 2): every copy of a rank runs the
// program, and the job survives the loss of any copy while one copy of each
// rank lives; the program never notices. Copies must compute the same
// thing, so where MPI lets the library choose (a receive from AnySource,
// Iprobe, Probe from AnySource, Request.Test) the lead copy's choice is
// taken by every copy (a backup waits at that call for its lead's). The
// program must keep the rest deterministic: make those calls from one
// goroutine, and let nothing it computes or sends depend on clocks,
// unseeded random numbers, or files and environment that differ between
// hosts.
//
// This package must not import libp2p, so that user binaries stay small and
// the process-agent wire stays language-neutral: PROTOCOL.md describes it
// completely, for bindings in other languages.
package mpi
