package job

import (
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Failure is a problem the submitter detects (CrossGrid's Table 1, in
// Zorilla's terms; see the design's failure table): its kind, the hosts
// at fault, for a rank's failure the rank and its exit status, and what
// the user is told.
type Failure struct {
	Kind  FailureKind
	Hosts []peer.ID
	Rank  int
	Code  int
	Why   string
}

func (f Failure) Error() string { return f.Why }

// FailureKind says what kind of problem a Failure is.
type FailureKind string

const (
	// HostSilent: a chosen host did not answer the commit in time, refused
	// it (hash mismatch, a lease it lost) or could not start its processes.
	HostSilent FailureKind = "host-silent"
	// LeaseExpired: the chosen hosts' leases expired before their commit
	// (the job's start came after its offers' life). The hosts are fine:
	// the job matches again at once.
	LeaseExpired FailureKind = "lease-expired"
	// StartTimeout: the two-phase start did not complete in time (not every
	// rank started).
	StartTimeout FailureKind = "start-timeout"
	// HostLost: a host died or became unreachable while the job ran.
	HostLost FailureKind = "host-lost"
	// BadProgram: a chosen host could not start the program because of
	// the program itself (exec format error, missing loader or
	// interpreter, not executable). Once a second host says so, the job
	// fails at once: no host will do better.
	BadProgram FailureKind = "bad-program"
	// RankFailed: a rank exited non-zero (CrossGrid: abnormal subjob
	// termination; the user is told).
	RankFailed FailureKind = "rank-failed"
)

// Action is what the submitter does about a failure.
type Action string

const (
	// RetryStart: kill every process, release what the failed hosts held,
	// and start again with Recovery.Plan (the same hosts, or spares in
	// place of the failed ones).
	RetryStart Action = "retry-start"
	// Rematch: kill everything, release every lease, and flood again,
	// keeping the failed hosts out for a while (CrossGrid: mark them
	// unavailable, repeat the matchmaking).
	Rematch Action = "rematch"
	// Shrink: a malleable job that lost hosts starts again on the hosts
	// left (which keep their slots, without a new match) at the size they
	// hold, from its last checkpoint, with Recovery.Plan.
	Shrink Action = "shrink"
	// Continue: the surviving copies carry on (r >= 2); nothing stops and
	// the record keeps its state.
	Continue Action = "continue"
	// Fail: kill everything; the job ends failed with Recovery.Reason.
	Fail Action = "fail"
)

// RetryPolicy bounds the retries of a job.
type RetryPolicy struct {
	// StartsPerMatch is how many starts one set of offers gets: the first,
	// then retries on the spares.
	StartsPerMatch int
	// MaxMatches is how many times the job is flooded for to get it
	// started, counted afresh after each restart.
	MaxMatches int
	// Backoff is the wait before the first restart of a job that lost a
	// host while it ran; each further restart waits twice as long, up to
	// MaxBackoff. It gives a network that just lost a machine time to
	// notice, so the next match does not pick a host about to go too.
	Backoff    time.Duration
	MaxBackoff time.Duration
}

// DefaultRetryPolicy starts twice per match (once, then once on the
// spares, as CrossGrid retries the same submission once before matching
// again) and matches at most three times, so a job that cannot start
// fails within a few scheduling deadlines instead of looping.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{StartsPerMatch: 2, MaxMatches: 3, Backoff: 2 * time.Second, MaxBackoff: time.Minute}
}

// backoff is the wait before restart number n (1, 2, ...).
func (rp RetryPolicy) backoff(n int) time.Duration {
	d := rp.Backoff
	for i := 1; i < n && d < rp.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, max(rp.MaxBackoff, rp.Backoff))
}

// Recovery is the decision: the action, the state to move the record to,
// a reason for the record and the user, the hosts to keep out for a while,
// and for RetryStart the new plan.
type Recovery struct {
	Action      Action
	State       State
	Reason      string
	Unavailable []peer.ID
	Plan        Plan
	// Restart marks a Rematch of a job that ran: it counts against the
	// job's retries and waits Backoff before flooding.
	Restart bool
	Backoff time.Duration
}

// Recover decides what a failure triggers, as a pure function of the
// record (its state, plan and counters), the failure (for HostLost, its
// Hosts are every host lost since the job started running) and the retry
// policy. The caller then moves the record with Transition(r, rec.State,
// now, rec.Reason), except for Continue.
func Recover(r Record, f Failure, rp RetryPolicy) Recovery {
	switch f.Kind {
	case BadProgram:
		if len(r.BadProgram) >= 2 {
			return Recovery{Action: Fail, State: Failed, Unavailable: f.Hosts,
				Reason: fmt.Sprintf("%d hosts said so; not tried further", len(r.BadProgram))}
		}
		return recoverStart(r, f.Kind, f.Hosts, rp)
	case HostSilent, StartTimeout:
		return recoverStart(r, f.Kind, f.Hosts, rp)
	case LeaseExpired:
		return rematchOrFail(r, fmt.Sprintf("%s on %d hosts (start %d)", f.Kind, len(f.Hosts), r.Starts), nil, rp)
	case HostLost:
		return recoverLost(r, f.Hosts, rp)
	case RankFailed:
		return Recovery{Action: Fail, State: Failed, Reason: fmt.Sprintf("rank %d exited with status %d", f.Rank, f.Code)}
	}
	return Recovery{Action: Fail, State: Failed, Reason: fmt.Sprintf("unknown failure %q", f.Kind)}
}

func recoverStart(r Record, f FailureKind, failed []peer.ID, rp RetryPolicy) Recovery {
	why := fmt.Sprintf("%s on %d hosts (start %d)", f, len(failed), r.Starts)
	if r.Plan != nil && r.Starts < rp.StartsPerMatch {
		if p, err := replan(*r.Plan, peerSet(failed), r.Desc.PMI); err == nil {
			return Recovery{Action: RetryStart, State: Starting, Reason: why + ": retry", Unavailable: failed, Plan: p}
		}
	}
	return rematchOrFail(r, why, failed, rp)
}

// recoverLost: replicas carry on while every rank keeps a copy; otherwise
// the job starts again elsewhere while it has retries left (r = 1: any
// host loss).
func recoverLost(r Record, failed []peer.ID, rp RetryPolicy) Recovery {
	why := fmt.Sprintf("lost %d hosts while running", len(failed))
	if r.Plan != nil && r.Plan.R >= 2 && everyRankSurvives(*r.Plan, peerSet(failed)) {
		return Recovery{Action: Continue, State: r.State, Reason: why + ": replicas continue", Unavailable: failed}
	}
	if p, ok := shrinkPlan(r, peerSet(failed)); ok {
		return Recovery{Action: Shrink, State: Starting, Unavailable: failed, Plan: p,
			Reason: fmt.Sprintf("%s: restarting on the %d hosts left, at %d ranks", why, len(p.Hosts), p.N)}
	}
	if r.Restarts < r.Desc.Retries {
		n := r.Restarts + 1
		return Recovery{Action: Rematch, State: Reserving, Unavailable: failed, Restart: true, Backoff: rp.backoff(n),
			Reason: fmt.Sprintf("%s: restart %d of %d", why, n, r.Desc.Retries)}
	}
	reason := fmt.Sprintf("not started again: its %d retries are used", r.Desc.Retries)
	if r.Desc.Retries == 0 {
		reason = "not started again (retries 0)"
	}
	return Recovery{Action: Fail, State: Failed, Unavailable: failed, Reason: reason}
}

func rematchOrFail(r Record, why string, failed []peer.ID, rp RetryPolicy) Recovery {
	if r.Matches-r.Restarts < rp.MaxMatches {
		return Recovery{Action: Rematch, State: Reserving, Reason: why + ": match again", Unavailable: failed}
	}
	return Recovery{Action: Fail, State: Failed, Unavailable: failed,
		Reason: fmt.Sprintf("%s: gave up after %d matches", why, r.Matches)}
}

// everyRankSurvives reports whether each rank keeps a copy on a host that
// did not fail.
func everyRankSurvives(p Plan, failed map[peer.ID]bool) bool {
	for _, copies := range p.RankTable().Peers() {
		alive := false
		for _, h := range copies {
			if h != "" && !failed[h] {
				alive = true
			}
		}
		if !alive {
			return false
		}
	}
	return true
}

// AppendHost adds p to hosts unless it is there or hosts is full.
func AppendHost(hosts []peer.ID, p peer.ID) []peer.ID {
	if len(hosts) >= MaxUnavailable || slices.Contains(hosts, p) {
		return hosts
	}
	return append(hosts, p)
}

func peerSet(ids []peer.ID) map[peer.ID]bool {
	m := make(map[peer.ID]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}
