// Package npb holds the pieces shared by the Go ports of the NAS Parallel
// Benchmarks in examples/ (IS and EP): NPB's 46-bit linear congruential
// random number generator (Randlc, Vranlc, Skip), the benchmark class
// letter, a wall-clock timer, the block partition of work over ranks, and
// the NPB-style results block.
//
// The generator is bit-for-bit NPB's, so that the published verification
// values of NPB 3.4 hold for these ports. Nothing here talks MPI: the
// benchmarks keep their computation in plain functions and call the mpi
// library from a thin layer of their own.
package npb
