package job

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// The protocols between a job's submitter and its workers. Each is versioned;
// message fields are only ever added, never renumbered or reused.
const (
	// OfferProtocol: worker -> submitter, one OfferMsg answered by an OfferReply.
	OfferProtocol protocol.ID = "/zorilla/offer/1.0.0"
	// LeaseProtocol: submitter -> worker, one LeaseRequest (cancel, commit,
	// release, kill) answered by a LeaseReply.
	LeaseProtocol protocol.ID = "/zorilla/lease/1.0.0"
	// FetchProtocol: worker -> submitter, a FetchRequest answered by a
	// FetchReply and then exactly Size raw bytes.
	FetchProtocol protocol.ID = "/zorilla/fetch/1.0.0"
	// ReportProtocol: worker -> submitter, an ReportHello and then a stream of
	// Events about one job's processes on that worker, until it ends.
	ReportProtocol protocol.ID = "/zorilla/report/2.0.0"
)

// Size limits of the messages above, checked on every read.
const (
	MaxOfferSize  = 4 << 10
	MaxLeaseSize  = 256 << 10 // a commit carries the rank table of up to MaxProcs copies
	MaxReplySize  = 4 << 10
	MaxReportSize = 96 << 10 // a file chunk plus headroom
	FileChunkSize = 64 << 10
)

// Bounds of a report stream's window: a worker keeps at most
// MaxUnackedReports reports that the submitter has not acknowledged, and
// takes no new one once their data reaches MaxUnackedBytes; then the
// processes' output waits in their pipes. A submitter reads a stream
// whole, whatever its session is doing, and holds what it has not taken
// yet: a worker that sends beyond its window has its stream reset.
const (
	MaxUnackedReports = 1024
	MaxUnackedBytes   = 4 << 20
)

// OfferMsg is a worker's answer to an advert: how many processes of the job it
// takes, held for the submitter by a lease until Expires.
type OfferMsg struct {
	Job     ID        `json:"job"`
	Lease   string    `json:"lease"`
	Slots   int       `json:"slots"` // c = min(P, free cores, n)
	Cores   int       `json:"cores"`
	Memory  int64     `json:"memory"`
	Expires time.Time `json:"expires"`
	Site    string    `json:"site,omitempty"` // the site its owner's "site=" label names, if any
	// GangFree, from a worker that gang-schedules the jobs sharing it, is
	// its free columns of the time-slice rotation (bit i: column i free;
	// worker/gang). Absent: the worker does not take part in one.
	GangFree *uint64 `json:"gang_free,omitempty"`
}

// OfferReply tells the worker whether the submitter keeps the lease. A worker
// whose offer is not kept releases the lease at once.
type OfferReply struct {
	Keep   bool   `json:"keep"`
	Reason string `json:"reason,omitempty"`
}

// LeaseOp is what a LeaseRequest asks of a worker.
type LeaseOp string

const (
	OpCancel  LeaseOp = "cancel"  // give back the lease unused
	OpCommit  LeaseOp = "commit"  // phase one: stage and start the processes in Commit
	OpRelease LeaseOp = "release" // phase two: every rank is in Init, let them go
	OpKill    LeaseOp = "kill"    // end the job's processes here and clean up
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
	Job    ID      `json:"job"`
	Lease  string  `json:"lease"`
	Commit *Commit `json:"commit,omitempty"`
	Reason string  `json:"reason,omitempty"` // why a kill, for the worker's log
	// Retry, on a kill after a failed start, asks the worker to keep the
	// host's slots for the job's next start (the retry on the same hosts
	// and the spares): once the processes and the job folder are gone, the
	// slots are reserved again under a new lease key, sent in the reply.
	// Reports of the killed start carry the old key, so the submitter never
	// mistakes them for the next start's.
	Retry bool `json:"retry,omitempty"`
	// ReleasedAt, on a release, is when the submitter released the job
	// (Unix ns, its clock), the same for every host: the hosts of two jobs
	// then see their releases in the same order, and the swap turn rule
	// (worker.PlanPreemption) picks the same job on all of them. 0 from
	// older submitters: each host uses its own clock.
	ReleasedAt int64 `json:"released_at,omitempty"`
}

// LeaseReply answers a LeaseRequest.
type LeaseReply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	Lease string `json:"lease,omitempty"` // a kill with Retry: the new lease key
}

// FileRef names a content-addressed file of a job.
type FileRef struct {
	Name string `json:"name"` // file name in the job folder (no path separators)
	Hash string `json:"hash"` // sha256, hex
	Size int64  `json:"size"`
}

// HostRef is one host of a job, as the MPI routers need it.
type HostRef struct {
	Peer  peer.ID  `json:"peer"`
	Addrs []string `json:"addrs,omitempty"`
	Site  int      `json:"site,omitempty"` // the host's site among the job's (SiteClasses); 0 for all from older submitters
}

// Commit is the first phase of the two-phase start for one host.
type Commit struct {
	Key      string        `json:"key"` // the job's secret: authenticates ranks and later requests
	N        int           `json:"n"`
	R        int           `json:"r"`
	Program  FileRef       `json:"program"`
	Args     []string      `json:"args,omitempty"`
	Env      []string      `json:"env,omitempty"`
	Inputs   []FileRef     `json:"inputs,omitempty"`
	Outputs  []string      `json:"outputs,omitempty"`
	Timeout  time.Duration `json:"timeout,omitempty"`
	Procs    []Proc        `json:"procs"`     // the copies this host runs
	Hosts    []HostRef     `json:"hosts"`     // every host of the job
	RankHost [][]int       `json:"rank_host"` // RankHost[rank][replica] = index in Hosts
	// Attempt numbers the job's starts (1, 2, ...), so that the processes
	// and MPI routes of a retried start never mix with a killed one's.
	Attempt int `json:"attempt,omitempty"`
	// CheckpointEvery is --checkpoint-every; Restore the checkpoint files
	// of this host's ranks when the run restarts from one (checkpoint.go).
	CheckpointEvery time.Duration `json:"checkpoint_every,omitempty"`
	Restore         []Restore     `json:"restore,omitempty"`
	// PMI: the ranks are MPICH processes served PMI-1 by their agents.
	PMI bool `json:"pmi,omitempty"`
	// GangColumn is the job's column of the time-slice rotation, free on
	// every host of the plan when they all offered one (worker/gang);
	// absent: the job runs whenever its host runs it.
	GangColumn *int `json:"gang_column,omitempty"`
}

// FetchRequest asks the submitter for one of a job's files.
type FetchRequest struct {
	Job  ID     `json:"job"`
	Key  string `json:"key"`
	Hash string `json:"hash"`
}

// FetchReply precedes the Size raw bytes of a fetched file.
type FetchReply struct {
	Size  int64  `json:"size"`
	Error string `json:"error,omitempty"`
}

// ReportHello opens an event stream for one job from one worker.
type ReportHello struct {
	Job   ID     `json:"job"`
	Key   string `json:"key"`
	Lease string `json:"lease"`
}

// ReportAck goes from the submitter to the worker on a report stream.
// The first one answers the hello: Seq is the last report the submitter
// holds (the worker sends again every later one it still has), or Refused
// says why the job will not take this host's reports (it was counted
// lost, or the submitter does not know the job): the worker ends the
// job's processes. Later ones acknowledge: the worker may forget reports
// up to Seq.
type ReportAck struct {
	Seq     uint64 `json:"seq"`
	Refused string `json:"refused,omitempty"`
}

// ReportKind says what an Report reports.
type ReportKind string

const (
	RepStarted   ReportKind = "started"   // every local copy is running
	RepReady     ReportKind = "ready"     // every local copy is in mpi.Init
	RepOutput    ReportKind = "output"    // one line of stdout or stderr
	RepExit      ReportKind = "exit"      // one copy ended
	RepFile      ReportKind = "file"      // a chunk of an output file
	RepFailed    ReportKind = "failed"    // this host cannot run its part (staging, start)
	RepAbort     ReportKind = "abort"     // a rank called mpi.Abort
	RepHeartbeat ReportKind = "heartbeat" // the host is alive; silence means it is lost
	RepDone      ReportKind = "done"      // every copy ended and output files were sent
	// RepPeerLost: this host's MPI router counted another host of the job
	// (Peer) lost. With r = 1 the job cannot go on, and this tells the
	// submitter which host to blame before the ranks' failures arrive.
	RepPeerLost ReportKind = "peer-lost"
	// RepLeaving: this host is draining (its agent is stopping): its
	// copies are about to end; count them lost now (Reason says why).
	RepLeaving ReportKind = "leaving"
	// RepFrozen and RepThawed: this host stopped the job's processes here
	// in place for a job of higher priority (Reason says which), and
	// continued them (issue 19). The job is frozen while any host is.
	RepFrozen ReportKind = "frozen"
	RepThawed ReportKind = "thawed"
	// RepSliced: the time this host's gang rotation held the job frozen
	// in this run so far (Frozen, a running total of closed intervals),
	// sent at most once per report interval and once before RepDone, not
	// once per slice (issue 19).
	RepSliced ReportKind = "sliced"
)

// Report is one report from a worker about the job's processes there.
type Report struct {
	Kind ReportKind `json:"kind"`
	// Seq numbers a host's reports from 1 (heartbeats excepted), so that
	// the reports sent again after the stream reopens are taken once.
	Seq      uint64  `json:"seq,omitempty"`
	Rank     int     `json:"rank,omitempty"`
	Replica  int     `json:"replica,omitempty"`
	Stream   string  `json:"stream,omitempty"` // stdout or stderr
	Data     []byte  `json:"data,omitempty"`   // an output line, or a file chunk
	Code     int     `json:"code,omitempty"`
	Signal   string  `json:"signal,omitempty"`
	TimedOut bool    `json:"timed_out,omitempty"`
	Reason   string  `json:"reason,omitempty"`
	Name     string  `json:"name,omitempty"` // output file name
	EOF      bool    `json:"eof,omitempty"`  // last chunk of that file
	Peer     peer.ID `json:"peer,omitempty"` // RepPeerLost: the host lost
	// Lost, on a RepExit of a replicated job, says why the copy counts as
	// lost rather than failed: its host left the job, which goes on.
	Lost string `json:"lost,omitempty"`
	// BadProgram marks a RepFailed whose cause is the program itself (the
	// kernel will not run it here), not the host's state.
	BadProgram bool `json:"bad_program,omitempty"`
	// Frozen, on a RepSliced, is the run's total time frozen by time
	// slices on this host.
	Frozen time.Duration `json:"frozen,omitempty"`
	// Ckpt names the checkpoint file a RepCheckpoint chunk is of.
	Ckpt *CheckpointPart `json:"ckpt,omitempty"`
}
