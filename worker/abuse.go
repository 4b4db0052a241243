package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/ratelimit"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// AbuseLimits bound what one submitter can make this worker do, whatever
// its policy lets it run: how big a job it takes part in, how many bytes
// it stages for one job, and how fast one submitter gets offers and
// commits. Lease requests in general are limited per peer by the rpc
// endpoint (node sets it), before they are read.
type AbuseLimits struct {
	// MaxJobProcs caps n×r of a job this worker offers to. A commit carries
	// the rank table of all n×r copies, and each of them becomes an MPI
	// route here, so a job far larger than the owner expects costs memory
	// even when this host runs one copy.
	MaxJobProcs int
	// MaxJobStage caps the bytes staged for one job here (program and
	// inputs together); MaxStage caps each file.
	MaxJobStage int64
	// Offers limits the offers made to one submitter, whoever forwarded
	// its adverts: each offer is a lease held and a stream opened.
	Offers ratelimit.Limit
	// Commits limits the commits from one submitter: each starts staging
	// and processes.
	Commits ratelimit.Limit
}

// DefaultAbuseLimits returns the limits of a real agent.
func DefaultAbuseLimits() AbuseLimits {
	return AbuseLimits{
		// 4096 copies: four times the largest job of the Grid'5000
		// experiments (1024 processes); the rank table of such a commit is
		// well under proto.MaxLeaseSize.
		MaxJobProcs: 4096,
		// 4 GiB: four files at the blob store's 1 GiB per file, half the
		// store's 8 GiB, so two large jobs can stage at once.
		MaxJobStage: 4 << 30,
		// 5 offers a second, 20 at once: a submitter starting many jobs
		// gets an offer for each of them within seconds, while a submitter
		// flooding distinct jobs through many neighbours costs this agent
		// at most 5 leases and streams a second.
		Offers: ratelimit.Limit{Rate: 5, Burst: 20},
		// 2 commits a second, 10 at once: a job commits once per host per
		// start, and a retry starts again after seconds.
		Commits: ratelimit.Limit{Rate: 2, Burst: 10},
	}
}

func (a AbuseLimits) validate() error {
	switch {
	case a.MaxJobProcs < 1 || a.MaxJobProcs > proto.MaxProcs:
		return fmt.Errorf("worker: MaxJobProcs must be 1..%d, got %d", proto.MaxProcs, a.MaxJobProcs)
	case a.MaxJobStage < 1:
		return fmt.Errorf("worker: MaxJobStage must be positive, got %d", a.MaxJobStage)
	}
	if err := a.Offers.Validate(); err != nil {
		return fmt.Errorf("worker: offer limit: %w", err)
	}
	if err := a.Commits.Validate(); err != nil {
		return fmt.Errorf("worker: commit limit: %w", err)
	}
	return nil
}

// Reasons a worker refuses an advert or a request, as counted in
// Service.Refusals.
const (
	RefusedBadAdvert      = "advert-bad"          // the need does not decode or does not match the advert
	RefusedDraining       = "draining"            // the agent is stopping
	RefusedOffersInFlight = "offers-in-flight"    // MaxOffersInFlight offers already being made
	RefusedOfferRate      = "offer-rate"          // the submitter is over AbuseLimits.Offers
	RefusedJobTooLarge    = "job-too-large"       // n×r over AbuseLimits.MaxJobProcs
	RefusedPolicy         = "policy"              // the owner policy declined (see Decision.Reason)
	RefusedBadLease       = "lease-request-bad"   // a lease request that does not decode
	RefusedCommitRate     = "commit-rate"         // the submitter is over AbuseLimits.Commits
	RefusedStageTooLarge  = "stage-too-large"     // the job's files are over AbuseLimits.MaxJobStage
	RefusedLeaseRequest   = "lease-request-error" // a lease request refused for any other reason
)

// ErrTooLarge is returned for a job over this worker's AbuseLimits.
var ErrTooLarge = errors.New("worker: job too large for this agent")

// abuse holds the worker's per-submitter buckets and its refusal counts.
type abuse struct {
	lim     AbuseLimits
	offers  *ratelimit.Peers
	commits *ratelimit.Peers
	refused ratelimit.Counts
}

func newAbuse(lim AbuseLimits) *abuse {
	return &abuse{lim: lim, offers: ratelimit.MustPeers(lim.Offers, 0), commits: ratelimit.MustPeers(lim.Commits, 0)}
}

// allowOffer takes an offer token of submitter: called once the policy
// accepted, so that adverts it declines cost the submitter nothing.
func (a *abuse) allowOffer(submitter peer.ID, now time.Time) bool {
	if !a.offers.Allow(submitter, now) {
		a.refused.Add(RefusedOfferRate)
		return false
	}
	return true
}

// admitCommit checks a commit from submitter against the commit rate and
// the size caps, counting a refusal.
func (a *abuse) admitCommit(submitter peer.ID, c proto.Commit, now time.Time) error {
	if !a.commits.Allow(submitter, now) {
		a.refused.Add(RefusedCommitRate)
		return fmt.Errorf("over %v commits a second from you; try again later%w", a.lim.Commits.Rate, errCounted)
	}
	if err := checkJobSize(a.lim, c); err != nil {
		a.refused.Add(refusalOf(err))
		return fmt.Errorf("%w%w", err, errCounted)
	}
	return nil
}

// checkJobSize is the pure check of a commit against the caps: n×r, and
// the sizes its files declare (staging enforces what really arrives).
func checkJobSize(lim AbuseLimits, c proto.Commit) error {
	if c.N < 0 || c.R < 0 || c.N > lim.MaxJobProcs || c.R > lim.MaxJobProcs || c.N*c.R > lim.MaxJobProcs {
		return fmt.Errorf("%w: n×r = %d×%d, this agent takes at most %d", ErrTooLarge, c.N, c.R, lim.MaxJobProcs)
	}
	var total int64
	for _, f := range append([]proto.FileRef{c.Program}, c.Inputs...) {
		if f.Size < 0 {
			return fmt.Errorf("file %q of negative size %d", f.Name, f.Size)
		}
		if f.Size > lim.MaxJobStage-total { // total + f.Size, which could overflow
			return fmt.Errorf("%w: files of more than %d bytes, this agent stages at most %d per job: %w",
				ErrTooLarge, lim.MaxJobStage, lim.MaxJobStage, errStage)
		}
		total += f.Size
	}
	return nil
}

var errStage = errors.New("staged size")

// errCounted marks (with an empty text) an error whose refusal is counted
// already.
var errCounted = errors.New("")

// countLeaseError counts a refused lease request unless its refusal was
// counted under a finer reason.
func (a *abuse) countLeaseError(err error) {
	if !errors.Is(err, errCounted) {
		a.refused.Add(RefusedLeaseRequest)
	}
}

func refusalOf(err error) string {
	if errors.Is(err, errStage) {
		return RefusedStageTooLarge
	}
	if errors.Is(err, ErrTooLarge) {
		return RefusedJobTooLarge
	}
	return RefusedLeaseRequest
}

// Refusals counts what this worker refused, by reason (the Refused*
// constants).
func (s *Service) Refusals() map[string]uint64 { return s.abuse.refused.Snapshot() }
