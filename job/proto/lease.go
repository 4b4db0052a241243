package proto

import (
	"time"
)

// LeaseOp is what a LeaseRequest asks of a worker.
type LeaseOp string

const (
	OpCancel  LeaseOp = "cancel"  // give back the lease unused
	OpCommit  LeaseOp = "commit"  // phase one of the start: stage and start the processes in Commit, up to mpi.Init
	OpRelease LeaseOp = "release" // phase two: every rank of the job is in mpi.Init; let them go on
	OpKill    LeaseOp = "kill"    // end the job's processes here and clean up
	// OpRetry, after a failed start: end the job's processes here as a
	// kill does, then keep the host's slots for the job's next start (the
	// retry on the same hosts and the spares), reserved again under a new
	// lease key sent in the reply. Reports of the killed start carry the
	// old key, so the submitter never mistakes them for the next start's.
	OpRetry LeaseOp = "retry"
	// OpResume, from a submitter that restarted: is the job still running
	// here? If so the worker reopens its report stream at once.
	OpResume LeaseOp = "resume"
	// OpCheckpoint, to rank 0's host: make rank 0's next Checkpoint call
	// take one whatever --checkpoint-every says (`zorilla stop --checkpoint`).
	OpCheckpoint LeaseOp = "checkpoint"
)

// LeaseRequest is sent by a submitter to one worker.
type LeaseRequest struct {
	Op     LeaseOp `json:"op"`
	Job    JobID   `json:"job"`
	Lease  string  `json:"lease"`
	Commit *Commit `json:"commit,omitempty"`
	Reason string  `json:"reason,omitempty"` // why a kill, for the worker's log
	// Retry on a kill is how submitters before OpRetry asked for one;
	// Normalize turns it into OpRetry.
	Retry bool `json:"retry,omitempty"`
	// ReleasedAt, on a release, is when the submitter released the job
	// (Unix ns, its clock), the same for every host: the hosts of two jobs
	// then see their releases in the same order, and the swap turn rule
	// (worker.PlanPreemption) picks the same job on all of them. 0 from
	// older submitters: each host uses its own clock.
	ReleasedAt int64 `json:"released_at,omitempty"`
}

// Normalize returns the request with its op as the worker acts on it: a
// kill with Retry is OpRetry.
func (r LeaseRequest) Normalize() LeaseRequest {
	if r.Op == OpKill && r.Retry {
		r.Op, r.Retry = OpRetry, false
	}
	return r
}

// LeaseReply answers a LeaseRequest.
type LeaseReply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	Lease string `json:"lease,omitempty"` // OpRetry: the new lease key
}

// Proc is one copy of one rank: rank Rank's replica Replica.
type Proc struct {
	Rank    int `json:"rank"`
	Replica int `json:"replica"`
}

// Commit is the first phase of the two-phase start for one host.
type Commit struct {
	Key     string        `json:"key"` // the job's secret: authenticates ranks and later requests
	N       int           `json:"n"`
	R       int           `json:"r"`
	Program FileRef       `json:"program"`
	Args    []string      `json:"args,omitempty"`
	Env     []string      `json:"env,omitempty"`
	Inputs  []FileRef     `json:"inputs,omitempty"`
	Outputs []string      `json:"outputs,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
	Procs   []Proc        `json:"procs"` // the copies this host runs
	// RankTable is where every copy of every rank runs (its fields travel
	// as "hosts" and "rank_host").
	RankTable
	// Attempt numbers the job's starts (1, 2, ...), so that the processes
	// and MPI routes of a retried start never mix with a killed one's.
	Attempt int `json:"attempt,omitempty"`
	// CheckpointEvery is --checkpoint-every; Restore the checkpoint files
	// of this host's ranks when the run restarts from one.
	CheckpointEvery time.Duration `json:"checkpoint_every,omitempty"`
	Restore         []Restore     `json:"restore,omitempty"`
	// RestoreSize, on a malleable job restarting at another size, is the
	// number of ranks of the run that took the checkpoint: Restore then
	// lists every old rank's file, for any rank here to read.
	RestoreSize int `json:"restore_size,omitempty"`
	// PMI: the ranks are MPICH processes served PMI-1 by their agents.
	PMI bool `json:"pmi,omitempty"`
	// GangColumn is the job's column of the time-slice rotation, free on
	// every host of the plan when they all offered one (internal/gang);
	// absent: the job runs whenever its host runs it.
	GangColumn *int `json:"gang_column,omitempty"`
	// Fence is how long the worker lets the job's processes run when the
	// submitter has answered nothing the worker sent in that time: then
	// it freezes them in place, until the submitter answers again (it
	// re-attached) or refuses the host (it counted it lost: they are
	// killed). The submitter starts a lost host's ranks elsewhere only
	// once the host's fence has surely closed, so a rank of a job
	// without replicas never runs twice at once. 0: no fence.
	Fence time.Duration `json:"fence,omitempty"`
}
