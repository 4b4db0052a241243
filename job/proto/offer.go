package proto

import (
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"
)

// The protocols between a job's submitter and its workers. Each is versioned;
// message fields are only ever added, never renumbered or reused.
const (
	// OfferProtocol: worker -> submitter, one OfferMsg answered by an OfferReply.
	OfferProtocol protocol.ID = "/zorilla/offer/1.0.0"
	// LeaseProtocol: submitter -> worker, one LeaseRequest answered by a
	// LeaseReply.
	LeaseProtocol protocol.ID = "/zorilla/lease/1.0.0"
	// FetchProtocol: worker -> submitter, a FetchRequest answered by a
	// FetchReply and then exactly Size raw bytes.
	FetchProtocol protocol.ID = "/zorilla/fetch/1.0.0"
	// ReportProtocol: worker -> submitter, a ReportHello and then a stream of
	// Reports about one job's processes on that worker, until it ends.
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

// OfferMsg is a worker's answer to an advert: how many processes of the job it
// takes, held for the submitter by a lease until Expires.
type OfferMsg struct {
	Job     JobID     `json:"job"`
	Lease   string    `json:"lease"`
	Slots   int       `json:"slots"` // c = min(P, free cores, n)
	Cores   int       `json:"cores"`
	Memory  int64     `json:"memory"`
	Expires time.Time `json:"expires"`
	Site    string    `json:"site,omitempty"` // the site its owner's "site=" label names, if any
	// GangFree, from a worker that gang-schedules the jobs sharing it, is
	// its free columns of the time-slice rotation (bit i: column i free;
	// internal/gang). Absent: the worker does not take part in one.
	GangFree *uint64 `json:"gang_free,omitempty"`
}

// OfferReply tells the worker whether the submitter keeps the lease. A worker
// whose offer is not kept releases the lease at once.
type OfferReply struct {
	Keep   bool   `json:"keep"`
	Reason string `json:"reason,omitempty"`
}

// FetchRequest asks the submitter for one of a job's files.
type FetchRequest struct {
	Job  JobID  `json:"job"`
	Key  string `json:"key"`
	Hash string `json:"hash"`
}

// FetchReply precedes the Size raw bytes of a fetched file.
type FetchReply struct {
	Size  int64  `json:"size"`
	Error string `json:"error,omitempty"`
}

// FileRef names a content-addressed file of a job.
type FileRef struct {
	Name string `json:"name"` // file name in the job folder (no path separators)
	Hash string `json:"hash"` // sha256, hex
	Size int64  `json:"size"`
}
