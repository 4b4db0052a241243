// Package submitter is the submitter side of an agent: the service that
// takes jobs (Submit), runs each as a session, and serves the protocols
// its workers speak to it (offer, decline, report, fetch, preempt).
//
// A session is one job: a lifecycle.Machine, which its one goroutine
// alone steps, and the executor of the machine's effects. Local effects
// (the record on disk, the job folder's output and journal, the watchers'
// feed, the tables the protocol handlers read) are done at once; those
// that talk to the network (floods, lease requests, copies dropped, the
// checkpoint writer's settle) run on goroutines of their own, bounded by
// the submitter's context, and come back to the session as inputs. No
// reply is ever waited for on the session's goroutine.
//
// Report streams are read whole as they come, whatever the session is
// doing: every byte stamps its host as alive (the machine's liveness reads
// the stamps on each Tick), heartbeats are answered at once, and the
// reports wait for the session in a window the worker bounds. A job's
// report journal lets an agent that restarts take its running jobs back
// (the machine's re-attach) without writing any output twice.
//
// Stop, Resume, Preempt and RunSwapped (the hybrid technique's swap
// driver) build on the machine's stop with a checkpoint; a stopped job
// resumes as a new session from its record.
package submitter
