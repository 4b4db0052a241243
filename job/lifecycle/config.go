package lifecycle

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/job"
)

// Config is what a submitter's agent decides about the life of its jobs:
// how it floods, how long it waits for offers and starts, when it counts a
// host lost, and how it retries. Every duration is read against the
// inputs' times; the machine has no clock of its own.
type Config struct {
	// Schedule is the flood's growing radius (Zorilla: 1 s, doubling),
	// with one extra radius flooded once the offers are enough, where it
	// may bring closer hosts.
	Schedule flood.Schedule
	// OfferGrace is how long to keep collecting offers once the job is
	// feasible, so that closer hosts and spares (overbooking) can still
	// come in; it also bounds the wait for one radius's answers.
	OfferGrace time.Duration
	// AnswerGap is how long without a new offer or decline (and with no
	// offer still being measured) counts as a radius answered: the flood
	// then moves on at once rather than at the end of the schedule's wait.
	// 150 ms: answers to one radius come within a few RTTs of each other,
	// and a gap too short only floods the next radius a little early.
	AnswerGap time.Duration
	// QuietAfter is how long after the last answer a radius with no new
	// answer counts as the flood having reached every agent; QuietUnheard
	// is the same while a live peer the agent knows has not answered yet.
	// 2 s: answers of a loaded network may come after the first radii's
	// short waits. 10 s: a loaded host's answer (one test agent of a CI
	// machine answered 2 s after the others) may still be on its way, and
	// a job that waits for nothing only fails later.
	QuietAfter   time.Duration
	QuietUnheard time.Duration
	// Direct is how many peers its overlay knows, and that have not
	// answered a radius, a job sends its advert to directly rather than
	// flood the next radius, which every agent already reached would
	// forward again to all its neighbours (at most flood.MaxDirect; 0:
	// always flood). 16: past that many, a radius is worth its messages.
	Direct int
	// Spares is how many unused offers, beyond the plan, stay reserved
	// until the job runs, to replace hosts that fail the commit. 2: a
	// failed commit is rare, two at once rarer.
	Spares int
	// Deadline is the default scheduling deadline: a job not placed by
	// then fails with "not enough resources". 2 minutes: the doubling
	// waits have flooded to radius 7 by then.
	Deadline time.Duration
	// ExpiryMargin is how long before its lease expires an offer stops
	// counting: a commit sent then may arrive after the lease is gone.
	// 5 s: a commit takes a round trip, and clocks differ a little.
	ExpiryMargin time.Duration
	// StartTimeout bounds phase one: every host reports its processes
	// started. 60 s: staging a program and its inputs over a slow link.
	StartTimeout time.Duration
	// InitTimeout bounds phase two once any rank is in mpi.Init. 60 s: a
	// rank reaches Init after the program's own start-up.
	InitTimeout time.Duration
	// LostAfter declares a host lost after this much silence on its
	// report stream. 10 s: five of a worker's 2 s heartbeats.
	LostAfter time.Duration
	// Fence is how long a host lets the job's processes run once this
	// submitter answers nothing it sends (proto.Commit.Fence): then it
	// freezes them. A lost host's ranks are started elsewhere no sooner
	// than Fence and a fifth after the host was last heard (the fifth
	// covers the host's timer firing late and the freezing itself), so
	// that a rank without replicas never runs twice at once. 5 s: two
	// of a worker's heartbeats may go unanswered before it freezes.
	Fence time.Duration
	// Retry bounds starts per match and matches per job.
	Retry job.RetryPolicy
	// Unavailable is how long a host that failed a start is not used
	// again for the job. 5 minutes: long enough for a flood or two to
	// find others.
	Unavailable time.Duration
	// GrowEvery is how long a malleable job below its largest size waits,
	// after a search for more hosts ended, before the next; the wait
	// doubles after each search that found nothing, up to GrowEveryMax.
	// 10 s and 5 minutes: a job finds hosts freed soon after its start
	// quickly, and a long job on a full network floods a few times an
	// hour (hosts that free slots also offer them from their waiting
	// line, without a flood).
	GrowEvery    time.Duration
	GrowEveryMax time.Duration
	// GrowLife is how long a host keeps an offer made to a growing job
	// (its advert's deadline). 2 minutes: a resize waits for the
	// program's next quiet checkpoint, which may take a while.
	GrowLife time.Duration
	// ResizeTimeout bounds the wait for a quiet checkpoint (no message in
	// flight at its cut) once a resize is asked; the job then runs on at
	// its size. 2 minutes, as a preemption's stop.
	ResizeTimeout time.Duration
}

// DefaultConfig returns the settings of a real agent.
func DefaultConfig() Config {
	return Config{
		Schedule:     flood.Schedule{First: time.Second, Factor: 2, MaxRadius: 8, Extra: 1},
		OfferGrace:   300 * time.Millisecond,
		AnswerGap:    150 * time.Millisecond,
		QuietAfter:   2 * time.Second,
		QuietUnheard: 10 * time.Second,
		Direct:       16,
		Spares:       2,
		Deadline:     job.DefaultDeadline,
		ExpiryMargin: 5 * time.Second,
		StartTimeout: 60 * time.Second,
		InitTimeout:  60 * time.Second,
		LostAfter:    10 * time.Second,
		Fence:        5 * time.Second,
		Retry:        job.DefaultRetryPolicy(),
		Unavailable:  5 * time.Minute,

		GrowEvery:     10 * time.Second,
		GrowEveryMax:  5 * time.Minute,
		GrowLife:      2 * time.Minute,
		ResizeTimeout: 2 * time.Minute,
	}
}

// Validate reports a Config no machine can follow.
func (c Config) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"OfferGrace", c.OfferGrace}, {"AnswerGap", c.AnswerGap}, {"QuietAfter", c.QuietAfter},
		{"QuietUnheard", c.QuietUnheard}, {"Deadline", c.Deadline}, {"StartTimeout", c.StartTimeout},
		{"InitTimeout", c.InitTimeout}, {"LostAfter", c.LostAfter}, {"Fence", c.Fence}, {"GrowEvery", c.GrowEvery},
		{"GrowEveryMax", c.GrowEveryMax}, {"GrowLife", c.GrowLife}, {"ResizeTimeout", c.ResizeTimeout}} {
		if d.v <= 0 {
			return fmt.Errorf("lifecycle: %s must be positive, got %v", d.name, d.v)
		}
	}
	switch {
	case c.Schedule.First <= 0 || c.Schedule.Factor < 1:
		return fmt.Errorf("lifecycle: schedule %+v: need First > 0 and Factor >= 1", c.Schedule)
	case c.Direct < 0 || c.Spares < 0 || c.ExpiryMargin < 0 || c.Unavailable < 0:
		return errors.New("lifecycle: Direct, Spares, ExpiryMargin and Unavailable must not be negative")
	case c.Retry.StartsPerMatch < 1 || c.Retry.MaxMatches < 1 || c.Retry.Backoff < 0 || c.Retry.MaxBackoff < 0:
		return fmt.Errorf("lifecycle: retry policy %+v: need a start and a match at least, no negative backoff", c.Retry)
	}
	return nil
}

// Env is what the machine knows of the agent it runs on.
type Env struct {
	// Self is the agent's own peer ID: its worker answers its adverts at
	// once, and it holds a copy of every checkpoint file it keeps.
	Self peer.ID
	// KnowsPeers says the agent has an overlay view: inputs then carry
	// the peers it knows (Input.Known), by which a flood is judged
	// answered. Without one, the extra radius is always flooded and the
	// reachable network is known to be in only once a radius brings no
	// answer.
	KnowsPeers bool
	// DirectLimit is how many peers the agent may send an advert to
	// directly at once (Config.Direct within flood.MaxDirect); 0 when its
	// flooder cannot.
	DirectLimit int
	// FloodLimit is the largest radius the agent's flooder floods with
	// on Config.Schedule (flood.Schedule.Limit).
	FloodLimit int
}
