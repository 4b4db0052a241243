package mpi

import (
	"os"
	"runtime"
)

// A rank process on a host with more of the job's ranks than cores gets a
// single P (Init, not InitWith, which may serve several ranks of one
// process, as tests do). Its share of the host is under a core; with more
// Ps the Go runtime wakes a further thread whenever a goroutine becomes
// ready, to look for work, and that thread takes a core another rank
// needs. NAS IS on 4 ranks and 2 cores ran 1.29 times NPB's time with one
// P against 1.48 with two (class A) and 1.15 against 1.21 (class B), the
// fastest of three runs in interleaved rounds (BENCHMARKS.md,
// "sysmon"). A program that wants its own sets the GOMAXPROCS environment
// variable, which is left alone.

// procsFor is the GOMAXPROCS for a rank process with local ranks of its
// job on its host and procs Ps now, or 0 to leave it: 1 when the ranks
// outnumber the Ps and the environment does not set GOMAXPROCS.
func procsFor(local, procs int, envSet bool) int {
	if envSet || local <= procs || procs <= 1 {
		return 0
	}
	return 1
}

// fitProcs applies procsFor to this process.
func (s *Session) fitProcs() {
	_, envSet := os.LookupEnv("GOMAXPROCS")
	if n := procsFor(s.localRanks(), runtime.GOMAXPROCS(0), envSet); n > 0 {
		runtime.GOMAXPROCS(n)
	}
}
