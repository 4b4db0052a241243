package proto

import (
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
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

// ReportHello opens a report stream for one job from one worker.
type ReportHello struct {
	Job   JobID  `json:"job"`
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
//
// Echo is the At of the last heartbeat the submitter read on the stream
// (0 before one): the worker learns that the submitter heard it at or
// after that instant of the worker's own clock, which is what the
// worker's fence counts from (Commit.Fence).
type ReportAck struct {
	Seq     uint64 `json:"seq"`
	Refused string `json:"refused,omitempty"`
	Echo    int64  `json:"echo,omitempty"`
}

// ReportKind says what a Report reports.
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
	// continued them. The job is frozen while any host is.
	RepFrozen ReportKind = "frozen"
	RepThawed ReportKind = "thawed"
	// RepSliced: the time this host's gang rotation held the job frozen
	// in this run so far (Frozen, a running total of closed intervals),
	// sent at most once per report interval and once before RepDone, not
	// once per slice.
	RepSliced ReportKind = "sliced"
	// RepCheckpoint is a chunk of a rank's checkpoint file (Ckpt says
	// which; Data, EOF as for RepFile).
	RepCheckpoint ReportKind = "checkpoint"
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
	// At, on a RepHeartbeat, is when the worker sent it, on a clock of
	// its own (opaque to the submitter), echoed back in the answers
	// (ReportAck.Echo).
	At int64 `json:"at,omitempty"`
}

// CheckpointPart names the checkpoint file a RepCheckpoint chunk belongs to.
type CheckpointPart struct {
	Num  uint64 `json:"num"`
	Size int64  `json:"size"`
	Sum  string `json:"sum"` // sha256 the rank computed, hex
	// Copies are the agents other than the host and the submitter that
	// hold the file, on the last chunk.
	Copies []peer.ID `json:"copies,omitempty"`
	// Quiet: the rank's channels were empty at the cut (mpi's Saved).
	Quiet bool `json:"quiet,omitempty"`
}

// Same reports whether p and q name the same file.
func (p CheckpointPart) Same(q CheckpointPart) bool {
	return p.Num == q.Num && p.Size == q.Size && p.Sum == q.Sum
}

// Restore is a rank's file of the checkpoint a run restarts from.
type Restore struct {
	Rank int     `json:"rank"`
	Num  uint64  `json:"num"`
	File FileRef `json:"file"`
	// Copies are agents other than the submitter that may hold the file
	// (CopyProtocol), asked in order when the submitter's copy fails.
	Copies []peer.ID `json:"copies,omitempty"`
}

// RestoreName is the name of rank's file of checkpoint num in a job folder
// (the mpi library's own name for it).
func RestoreName(num uint64, rank int) string { return fmt.Sprintf("ckpt-%d.rank-%d", num, rank) }

// MaxCheckpointFile bounds one rank's checkpoint file a submitter keeps.
const MaxCheckpointFile = 4 << 30
