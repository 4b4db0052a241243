// Package router is the agent side of the MPI runtime, the communication
// daemon of MPICH-V and the MPD of P2P-MPI.
//
// One Router per agent serves the agent's MPI unix socket and the link
// protocol (ProtocolID). The agent adds each job before its processes start
// (AddJob, with the rank table and which copies run here), waits until every
// local copy is in mpi.Init (Job.InitReady: phase one of the two-phase
// start), reports that to the submitter, and releases the ranks when the
// submitter says every agent is ready (Job.Release: phase two). It follows
// Job.Events (a rank aborted, finalized or died, a remote agent was lost,
// the job failed) and calls Job.Fail when a process dies or the job must end,
// and RemoveJob at the end.
//
// Routing: a message from a local rank goes straight into the queue of a
// local destination, or over one libp2p stream per (job, remote agent),
// opened on first use. Links have credit-based flow control: a sender has at
// most a window of bytes in flight per link (Config.Window, or less when the
// job's remote agents share Config.JobBuffer), which the receiving agent
// gives back as it writes them to its ranks, and local senders are bounded by
// Config.QueueBytes per destination; so a fast sender can never exhaust an
// agent's memory. Links carry heartbeats: an agent silent for
// Config.HeartbeatTimeout, or whose stream breaks, is lost, and the job fails
// (unless every rank it ran has a live copy elsewhere) so that blocked calls
// return errors within a bounded time. Every message carries its source rank
// (stamped here, from the authenticated connection) and a per-pair sequence
// number, and reaches a rank through one function that drops duplicates, so
// replicated ranks need no change to the library.
//
// Bad input — garbage or oversized frames, a wrong key, an unknown job, a
// rank that does not run here — is refused on its own connection or stream
// and changes no job. The wire formats are in ../PROTOCOL.md.
package router
