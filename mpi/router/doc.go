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
// Shared memory (shm.go): ranks of an unreplicated job on this agent get
// rings to each other at Init and stop sending each other messages through
// the router; it only hands out the ring files and still watches the
// processes, so a death fails the job as before.
//
// Routing: a message from a local rank goes straight into the queue of a
// local destination (when the ranks use no rings), or over one libp2p stream per (job, remote agent),
// opened on first use. Links have credit-based flow control: a sender has at
// most a window of bytes in flight per link (Config.Window, or less when the
// job's remote agents share Config.JobBuffer), which the receiving agent
// gives back as it writes them to its ranks, and local senders are bounded by
// Config.QueueBytes per destination; so a fast sender can never exhaust an
// agent's memory. Every message carries its source rank (stamped here, from
// the authenticated connection) and a per-pair sequence number, and reaches
// a rank through one filter that passes only what extends delivery from
// where it stands, so a message arrives once, in order, whichever copy of
// its sender sent it.
//
// Replication (P2P-MPI's protocol, replica.go): each local copy's messages
// go into its log (sendlog.go) until every live copy of the destination has
// acknowledged them; only the lead copy of a rank transmits. When a lead's
// agent or process is lost, the next copy's agent resends from its log what
// each destination copy lacks and leads from then on; the job fails only
// when a rank has no copy left. Where MPI lets the library choose, the
// lead's choice is forwarded to its backups, and nothing more the lead sends
// leaves before they hold it (choice.go). A synchronous send completes
// when the receiver's lead matched it: the lead's acknowledgement goes to
// every copy of the sender, a backup's is kept until its lead's comes, and
// sent if it takes over (syncack.go).
//
// Liveness (watch.go): links carry heartbeats, and every frame of a remote
// agent on any of the job's streams stamps it alive. A broken stream is
// not proof of a lost agent: the link opens a new one and resends what the
// remote lacks. One watch loop per job counts each agent's silence from
// the stamps, a late check counting one heartbeat interval at most, so a
// stall of this agent itself is not blamed on the others. An agent silent
// for Config.HeartbeatTimeout, unreachable for that long, or breaking the
// protocol is lost, and an agent that was counted lost is fenced: its
// links are refused and its copies end.
//
// Bad input — garbage or oversized frames, a wrong key, an unknown job, a
// rank that does not run here — is refused on its own connection or stream
// and changes no job. The wire formats are in ../PROTOCOL.md.
package router
