// Package npb holds the pieces shared by the Go ports of the NAS Parallel
// Benchmarks in examples/ (IS and EP):
//
//   - NPB's 46-bit linear congruential random number generator: Randlc (the
//     double-precision split NPB specifies), Vranlc (the same numbers from
//     one 64-bit multiply each, 20 times faster) and Skip (jump ahead, so
//     each rank generates its own stretch of one global sequence). They are
//     bit-for-bit NPB's, so that NPB 3.4's verification values hold.
//   - the class letter (ParseClass), the wall-clock Timer, the Block
//     partition of work over ranks, and the NPB-style Results block.
//   - Comm, the MPI calls the ports make, with two implementations: World,
//     over an mpi communicator, and Solo, one rank without an agent.
//     Connect picks one: World when the agent started the process (mpi.Init
//     from the environment), Solo otherwise.
//
// The benchmarks keep their computation in plain functions that know
// nothing of MPI, and make their Comm calls from a thin layer of their own.
package npb
