// Package lifecycle is the life of a job on its submitter, from the first
// advert to the exit status, as a pure state machine: Machine.Step takes
// one Input (an Event, the time, and what the agent knew then) and returns
// the Effects it calls for. It has no clock, no goroutine, no channel and
// no I/O (a test in package job checks its source), so its behaviour is
// read from its inputs alone: the stories of job/testdata/lifecycle drive
// it step by step, and a property test drives it with random worlds.
//
// # Inputs and effects
//
// Inputs: Begin; Tick (a timer is due: Machine.Deadline says when);
// Flooded and DirectFailed (a flood's radius, or a direct advert, went
// out or not); Arrived, Offer and OfferDropped (a worker's offer: its
// arrival while its sender is measured, then the offer); Decline;
// LeaseReply (the answer to a Lease effect); Report and StreamEnded (what
// a host's report stream brings); CheckpointFiles (what the checkpoint
// writer kept); Cancel, Stop and Shutdown (the user's and the agent's
// requests).
//
// Effects: Flood and Direct (the advert); Lease (cancel, commit, retry,
// release, kill, resume or checkpoint at a host); AnswerOffer and
// AnswerStop; Notify (a line, a state, the reservation's progress or the
// end, for the job's watchers); Save (the record); Take (a report taken:
// its output written and journaled); Watch and Refuse (which report
// streams are welcome); the checkpoint writer's WriteChunk, DropChunks and
// SettleCheckpoints; GrantFiles, ReleaseFiles, DropCopies and
// RemoveCheckpointDir (checkpoint files); DropOutputs; AddAddrs; End.
//
// An executor (package job/submitter) performs the effects: local ones at
// once, network ones on goroutines whose outcome comes back as an input,
// so that no reply ever holds up the next input.
//
// # Phases
//
// Beside the record's states (waiting, reserving, starting, running, and
// the ends), the machine knows the steps that wait for replies:
//
//	idle ──Begin──▶ reserving ──place──▶ committing ──every reply──▶ watching
//	                    ▲                    │ refused                │ run ends
//	                    │                    ▼                        ▼
//	                 pausing ◀──rematch── stopping-start ◀─start─ settling
//	                    ▲                    │ retry           failed   │
//	                    │                    ▼                          ▼
//	                    └──restart/rematch───────────────────────── killing ──▶ over
//
// A reservation floods with a growing radius (flood.Growth), collects and
// orders offers (P2P-MPI's rlist, bounded by overbooking), and places the
// job (job.Place) once the offers are enough and the extra radius worth
// it, or the flood has reached every agent it can; it fails at once when
// waiting cannot help (Hopeless) and at the scheduling deadline. Offers
// whose leases expire first are dropped: a job never commits one.
//
// The start sends every commit and awaits every reply; a refused one
// stops the start (its hosts keep their slots under new keys, OpRetry)
// and Recover decides: retry on the spares, match again, or fail. Then
// phase one (every host started its processes, the record says Running,
// and every rank reaches mpi.Init) and phase two (the release), then the
// run: reports, output, checkpoints,
// silences (LostAfter), lost copies of a replicated job, and stops with a
// checkpoint. When the run ends the checkpoint writer settles, what still
// runs is killed, and Recover decides again (a restart from the last
// checkpoint after a host loss with r = 1).
package lifecycle
