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
// AnyTag; synchronous Ssend and Issend (complete once a receive matched the
// message); Request.Wait, Request.Test, Waitall, Waitany, Waitsome, Testany,
// Testall; Comm.Probe and Comm.Iprobe; Wtime. Messages between a pair with
// the same tag and communicator are never overtaken.
//
// Communicators: World, Comm.Dup and Comm.Split (Undefined colour: no
// communicator). Each has its own message space, so a library working on a
// duplicate never takes the program's messages; Dup and Split of different
// communicators must not run at the same time in one process.
//
// Collectives: Comm.Barrier, Bcast, Reduce, Allreduce, Scan, Exscan,
// ReduceScatter, Gather(v), Scatter(v), Allgather(v), Alltoall, Alltoallv,
// with algorithms correct for any number of ranks. Where ranks share a host
// (HostOf), Barrier, Bcast, Reduce, Allreduce, Scan, Exscan, ReduceScatter,
// Gather(v), Scatter(v), Allgather(v), Alltoall and Alltoallv first
// combine within each host, then among one leader per host, on any
// communicator; where the job spans sites (SiteOf), the host leaders of
// each site combine next, and one leader per site crosses between sites
// last. Reductions and scans apply the Op in rank order, as MPI requires of
// a non-commutative operation (see Op), and so take the host levels only
// where every host (and site) holds consecutive ranks. Alltoall goes
// through the leaders up to 64 KiB per rank; Alltoallv decides per block
// (up to 64 KiB / Size() bytes between hosts through the leaders, the rest
// directly). When all of a communicator's ranks share this host (every
// peer through a ring), Alltoall and Alltoallv post every block at once
// instead of pairwise steps, each block as soon as its destination says
// it posted its receives, and the calling goroutine moves them all itself
// (no other thread to wake) unless another send of the process is under
// way. For Gatherv and Scatterv, whose counts only the root knows,
// each host leader first gathers its own ranks' counts.
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
// Checkpoints: Comm.Checkpoint, called by every rank at a point the
// program chooses (between iterations), saves each rank's state and the
// messages in flight across the cut; a job with one copy per rank that
// loses a host starts again from its last complete checkpoint, where
// Restored gives each rank its state back (checkpoint.go says how).
//
// Ranks on the same agent talk through shared memory (rings the agent
// passes at Init; see "Shared memory" in PROTOCOL.md), not through the
// agent: the same messages, sequence numbers and matching, so nothing
// changes for the program. Replicated jobs fall back to the agent path
// (a lead's messages must reach every copy and the agents' logs), as do
// ranks the agent gives no rings (too many ranks for its per-job bound,
// or processes that did not ask). Failures still travel through the
// agent: a rank that dies or writes garbage into a ring fails the job with
// the reason, and every blocked call returns it.
//
// A receive blocked on a rank with a ring reads that ring itself for a few
// tens of microseconds, then sleeps without using the processor until the
// ring's standby reader completes it. On an agent with more ranks of the
// job than cores for them, every wait sleeps at once: the core a rank
// would poll on is the one the rank it waits for needs. Messages make one trip through
// shared memory (copied in by the sender, out by the receiver, straight
// into the posted buffer). A process that sets ZORILLA_MPI_CMA_MIN sends
// messages of that size and more single-copy: the receiver copies them
// straight out of the sender's memory with process_vm_readv, and the send
// returns once it has; where the kernel forbids that (ranks of different
// uids, a ptrace policy, another pid namespace), the first large message
// to a peer finds out, and that peer's messages go through the ring from
// then on (shm_cma.go). It is off by default: on the machine it was
// measured on, the ring's two copies were faster.
//
// This package must not import libp2p, so that user binaries stay small and
// the process-agent wire stays language-neutral: PROTOCOL.md describes it
// completely, for bindings in other languages.
package mpi
