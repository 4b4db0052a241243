package worker

import (
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Seniority is a job's place in the line for contested hosts: when it
// started waiting (its submission, carried in its advert as the time the
// advert was issued) and its ID to break ties. Every agent orders jobs
// by it the same way, so two jobs that each hold part of what they need
// never both wait for the other: the later one gives the contested hosts
// back (proto.DeclineYield) and the earlier one is offered them first.
type Seniority struct {
	Since time.Time
	Job   proto.JobID
}

// Precedes reports whether a comes before b: the earlier submission, then
// the smaller job ID. It is a strict total order on distinct jobs, so it
// never lets both of two jobs (nor neither) go first.
func Precedes(a, b Seniority) bool {
	if !a.Since.Equal(b.Since) {
		return a.Since.Before(b.Since)
	}
	return a.Job < b.Job
}

// HeldMemory is the memory a host holds for a job offered slots
// processes there: the per-host requirement, or slots × the per-process
// declaration when that is more.
func HeldMemory(n proto.Need, slots int) int64 {
	if n.MemPerProc > 0 && slots > 0 && n.MemPerProc > proto.MaxSize/int64(slots) {
		return proto.MaxSize
	}
	return max(n.Req.MinMemory, int64(slots)*n.MemPerProc)
}

// commitMargin is how long past its scheduling deadline a job's lease
// lasts: the time to place and commit once the flood at its deadline
// brought enough.
const commitMargin = 30 * time.Second

// leaseTTL is how long an offer for need stays reserved without a commit:
// the job's scheduling deadline and the commit margin, so that an offer
// made at its first flood is still good when it commits at its deadline;
// 0 (the lease table's default) when the advert says no deadline. The
// table caps it (LeaseConfig.MaxTTL): a job may search longer than a host
// holds an idle promise, and its submitter then drops the offers that
// expire.
func leaseTTL(need proto.Need) time.Duration {
	if need.Deadline <= 0 {
		return 0
	}
	return need.Deadline + commitMargin
}
