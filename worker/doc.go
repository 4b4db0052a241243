// Package worker is the gatekeeper of the local machine: the owner policy
// (J applications, P processes each, cores, memory, requirements, allow and
// deny lists) as a pure function, reservation leases with expiry, staging of
// programs and inputs verified by sha256, and launching, watching, limiting
// and cleaning up the processes of the jobs this machine takes part in
// (subpackage proc).
//
// # Deciding on an advert
//
// Decide(policy, usage, submitter, need) is P2P-MPI's gatekeeper test
// (section 4.2, step 4) plus Zorilla's requirements: the submitter is not
// denied (and is allowed, when an allow list is set), fewer than J
// applications are running or reserved, OS, arch, labels, cores and memory
// match, and the offer is c = min(P, free cores, n) processes. It is pure
// and table-tested; its Reason is meant for logs and `submit --dry-run`.
//
// # Leases
//
// Leases is the table of what this machine has promised. Admit decides and
// reserves in one step under the table's lock, so two adverts arriving at
// once can never both be offered the same cores. A lease has a random key
// that only the submitter learns (in the offer) and must quote back:
//
//   - Commit(key, job) when the submitter places processes here: the lease
//     stops expiring; Shrink it to what the plan actually uses;
//   - Release(key) on a cancel, on a commit that does not use this host, and
//     when the job's processes are gone;
//   - otherwise the lease expires (LeaseConfig.DefaultTTL, capped by MaxTTL)
//     and its slots come back.
//
// Expiry is lazy, evaluated against the injected clock on every call, so
// no goroutine runs behind the table. Usage() is what the leases hold, the
// input Decide needs. A job holds at most one lease per machine: a wider
// flood that reaches the machine again gets no second offer.
//
// Allow and deny files (--allow FILE, --deny FILE) hold one peer ID per
// line with '#' comments; LoadPeerList reads them and EditPeerList changes
// one entry keeping the rest. In Policy a nil Allow accepts every
// submitter that is not denied (the agent's --open) and an empty one
// accepts nobody; the agent builds an empty one when the owner lists
// nobody (trust by default). Policy.Self, the agent's own ID, passes the
// allow list: an agent is a worker for the jobs submitted through it.
//
// # Lease requests
//
// A submitter acts on its lease with a proto.LeaseRequest: cancel,
// commit, release, resume, checkpoint, kill, retry (a kill with the Retry
// flag of older submitters reads as a retry). decideLease decides what a
// request does from the request, the peer and a snapshot of what the
// worker knows (leaseView: the lease, whether the job runs here under it,
// the drain); leaseRequest does it. Only the lease's submitter is obeyed,
// for the lease's job. A retry ends the run here and keeps its slots, its
// priority and need under a new key (Leases.Renew), the slots never free
// in between. The advert's path is decided the same way (decideAdvert,
// behindHigher, afterRefusal), and so is what a copy's end reports
// (decideCopyEnd, exitReports). The MPI side of a job is an interface
// (MPI, MPIJob) that RouterMPI gives for the agent's router.
//
// # Declines
//
// A refusal the submitter can act on carries a proto.DeclineCode (policy,
// busy, slots, requirement, memory, draining) and, for a requirement, its
// detail in --require's syntax ("mem=8G"). The worker tells the submitter
// on proto.DeclineProtocol, once per job and at most DeclineRate a second in
// all, so that `submit` can say why a job found no room ("24 agents saw
// the advert: 18 do not allow you, ..."). A lease key is used once: a
// second commit on it is refused (ErrLeaseUsed), as is any lease request
// from a peer other than the lease's submitter.
//
// # The waiting line
//
// An advert declined only for lack of free slots (Decision.Full: J,
// cores, P or memory in use) waits in a bounded line (WaitConfig) until
// it expires. The moment slots come back (Leases.Freed: a lease released,
// shrunk or expired) the worker offers them to the earliest job listed
// (Precedes over WaitPriority: the advert's issue time, which is the
// job's submission, clamped to WaitConfig.Skew before this worker first
// saw it); a submitter that no longer needs them refuses and the job
// leaves the line. When such an advert is declined, or the line finds
// its job still refused, while later jobs hold uncommitted leases here
// whose room would let it in (Contested: the latest first, as few as
// needed), their submitters are told to yield (proto.DeclineYield), each
// only once it has kept the offer (Lease.Held: an ask must not overtake
// the offer it is about); a job that gives the lease back as asked stays
// in the line, any other cancel or a commit takes it out.
//
// # Abuse limits
//
// Whatever the policy lets a submitter run, AbuseLimits bound what it can
// make this worker do: no offer to a job of more than MaxJobProcs copies
// (n×r), at most MaxJobStage bytes staged per job (MaxStage per file), and
// per-submitter token buckets on the offers made to it and the commits it
// sends. Every refusal, these and the policy's, is counted by reason
// (Service.Refusals, the Refused* constants) for the agent's stats. Blobs
// fetched for a job leave the store when the last job using them ends.
//
// # Staging
//
// With ServiceConfig.PeerStaging and a chunk service (SetChunks), a worker
// stages a job's files in verified chunks from the job's other hosts and
// its submitter (package internal/chunk), and serves the files of the jobs
// running here to their other hosts, asked with the job's key; a submitter
// that sends no manifest is asked for the whole file as before.
//
// # Gang scheduling
//
// With ServiceConfig.Gang set (Columns > 0), the jobs sharing this host
// take turns on aligned time slices (package gang): offers carry the free
// columns, a commit names the job's column, and one goroutine (runGang,
// gangloop.go) freezes and thaws the jobs' processes at each slice
// boundary with proc.Freeze and proc.Thaw, leaving alone a job that
// preemption froze.
package worker
