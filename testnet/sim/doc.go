// Package sim is a deterministic simulation of a Zorilla network: up to
// tens of thousands of agents in one goroutine, in virtual time, with a
// seeded random source, so that a run replays exactly from its seed.
//
// Every agent decides with the project's own code: the submitter's side
// of a job is job/lifecycle's Machine, fed the simulated world's events
// one at a time; adverts spread by the flood's rule (flood.Rule) over
// neighbour sets that the overlay's exchange forms before the run, from
// each agent's bootstrap peers (overlay.ExchangeTarget, ExchangeAnswer,
// Evict and SelectNeighbours);
// a worker answers adverts and lease requests with its own lease table
// (worker.Leases, on the simulated clock), its owner policy (worker.Decide,
// inside Leases.Admit) and its lease decisions (worker.DecideLease,
// worker.CommitRefusal); placement is job.Place, inside the machine.
// What the simulation stands in for is the world: the network (one-way
// delays of half the RTT of a topology, loss, cuts), the clock (with a
// skew per agent), staging times, and processes (a rank is a duration and
// an exit status).
//
// A run is a loop over one event queue ordered by virtual time, ties
// broken by the order events were made; nothing in it reads the wall
// clock, starts a goroutine or depends on map order. Each event handled
// appends a line to the run's trace, whose SHA-256 is the run's digest:
// the same configuration and seed give the same digest.
//
// Invariants are checked as the run goes (Check): a slot is never
// committed to two jobs, every lease is committed or given back within its
// life, a job ends once, a rank of a job without replicas never runs twice
// at once, a replicated job fails only when every copy of some rank is
// gone, a malleable job stays within its sizes, and no queue grows
// without bound. The first violation stops the run; Result.Replay is the
// command that runs it again.
//
// Faults (Faults) are drawn from the same seed: agents crash and restart
// (the submitter's agent too, mid-job), a site is cut off and healed,
// messages are lost or delayed, hosts are slow, clocks are skewed, and
// liars offer slots they do not honour and flood forged adverts.
package sim
