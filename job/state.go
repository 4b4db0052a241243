package job

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// State is where a job is in its life, as `zorilla status` shows it.
type State string

const (
	Waiting   State = "waiting"   // accepted by the submitter's agent, not yet flooded
	Reserving State = "reserving" // flooding adverts and collecting offers
	Starting  State = "starting"  // two-phase start: committing and launching on the chosen hosts
	Running   State = "running"   // every process started
	Done      State = "done"      // every rank exited 0
	Failed    State = "failed"    // a rank failed, not enough resources, timeout, or the start failed for good
	Cancelled State = "cancelled" // the user cancelled it
	// Stopped: the user stopped it with a checkpoint (`zorilla stop
	// --checkpoint`); nothing runs or is held, and `zorilla resume` starts
	// it again from that checkpoint.
	Stopped State = "stopped"
)

// ErrTransition is wrapped by every refused state change.
var ErrTransition = errors.New("job: illegal state transition")

// transitions lists the legal moves. Besides the straight path, a failed
// start goes back to Starting (retry on the spares) or Reserving (match
// again, CrossGrid's Table 1), and a running job whose host dies with r = 1
// goes back to Reserving to be restarted; a job whose processes all started
// (Running) but whose ranks did not all reach mpi.Init in time goes back to
// Starting, its start retried.
var transitions = map[State][]State{
	Waiting:   {Reserving, Failed, Cancelled},
	Reserving: {Starting, Done, Failed, Cancelled}, // Done: a dry run's list-match ended
	Starting:  {Running, Starting, Reserving, Failed, Cancelled},
	Running:   {Done, Failed, Cancelled, Reserving, Stopped, Starting},
	Stopped:   {Reserving, Cancelled}, // resumed, or its checkpoint dropped
}

// ParseState reads a state name.
func ParseState(s string) (State, error) {
	switch st := State(s); st {
	case Waiting, Reserving, Starting, Running, Done, Failed, Cancelled, Stopped:
		return st, nil
	}
	return "", fmt.Errorf("state: unknown %q", s)
}

// Terminal reports whether a job in this state is over: nothing of it runs
// and no agent holds anything for it. A stopped job may be resumed.
func (s State) Terminal() bool { return s == Done || s == Failed || s == Cancelled || s == Stopped }

// CanTransition reports whether a job may move from one state to another.
func CanTransition(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// StateChange is one state change of a job, in its record's history.
type StateChange struct {
	State  State     `json:"state"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
}

// Bounds on a record's history, so a job retried many times keeps a small
// record: the first events and the latest ones are kept.
const (
	MaxHistory   = 64
	MaxReasonLen = 1024
	// MaxUnavailable bounds the hosts a record lists as unavailable; a job
	// failing on more is failing for a reason of its own.
	MaxUnavailable = 256
)

// Record is what the submitter keeps about a job, on disk, from submit to
// the end: its description, key, state with the times of every change, the
// current plan and the outcome.
type Record struct {
	ID       ID            `json:"id"`
	Key      Key           `json:"key"`
	Desc     Description   `json:"desc"`
	State    State         `json:"state"`
	Created  time.Time     `json:"created"`
	Updated  time.Time     `json:"updated"`
	History  []StateChange `json:"history"`
	Attempts int           `json:"attempts,omitempty"` // starts tried so far, in all
	Matches  int           `json:"matches,omitempty"`  // times the job entered reserving (floods)
	Starts   int           `json:"starts,omitempty"`   // starts tried since it last entered reserving
	Plan     *Plan         `json:"plan,omitempty"`     // the placement of the current or last start
	Exit     int           `json:"exit,omitempty"`     // exit status of the job: the first non-zero rank's
	Reason   string        `json:"reason,omitempty"`   // why it failed or was cancelled, e.g. "rank 3 exited 2"
	Offers   []Offer       `json:"offers,omitempty"`   // the latency-sorted rlist of the last reservation
	DryRun   bool          `json:"dry_run,omitempty"`  // list-match only: offers listed, then all cancelled
	// Declines count the agents that saw the last reservation's advert and
	// said why they made no offer (SeenSummary puts them in words).
	Declines []DeclineCount `json:"declines,omitempty"`
	// Unavailable are the hosts marked unavailable for this job because
	// they failed a start or were lost: its matches leave them out.
	Unavailable []peer.ID `json:"unavailable,omitempty"`
	// Lost are the copies of ranks a replicated job lost while it ran
	// (at most MaxLost), with when and why.
	Lost []LostCopy `json:"lost,omitempty"`
	// BadProgram are the hosts that could not start the program because
	// of the program itself (at most MaxUnavailable).
	BadProgram []peer.ID `json:"bad_program,omitempty"`
	// Program and Inputs are the job's files (in the submitting agent's
	// store), kept so that a job re-attached after that agent restarted
	// can still be started again elsewhere.
	Program *proto.FileRef  `json:"program,omitempty"`
	Inputs  []proto.FileRef `json:"inputs,omitempty"`
	// Restarts counts the times the job was started again after losing a
	// host while it ran (bounded by Desc.Retries).
	Restarts int `json:"restarts,omitempty"`
	// Runs are the start attempts, each with its hosts and how it ended
	// (at most MaxRuns: the first and the latest).
	Runs []Run `json:"runs,omitempty"`
	// Adverts is the highest advert number the job flooded under
	// (proto.FloodKey): every match and every search of a malleable job
	// for more hosts floods under a key of its own.
	Adverts int `json:"adverts,omitempty"`
	// Resizes is a malleable job's size history (at most MaxResizes, the
	// newest); its size now is WorldSize.
	Resizes []Resize `json:"resizes,omitempty"`
	// Checkpoints is the manifest of the job's checkpoints (checkpoint.go):
	// the newest complete one and any newer one still arriving.
	Checkpoints []Checkpoint `json:"checkpoints,omitempty"`
	// Flood samples the reservations as they went: radius, offers and
	// slots over time (at most MaxFloodSamples).
	Flood []FloodSample `json:"flood,omitempty"`
	// Time is the time spent running, frozen and swapped out up to the
	// last switch (account.go; TimeAt adds the current phase), and
	// Switches the latest changes of phase (at most MaxSwitches).
	Time     TimeUse  `json:"time,omitzero"`
	Switches []Switch `json:"switches,omitempty"`
}

// Run is one start attempt of a job: when, on which hosts, and how it
// ended ("done", or the failure that ended it).
type Run struct {
	Attempt int       `json:"attempt"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	Hosts   []peer.ID `json:"hosts"`
	End     string    `json:"end,omitempty"`
	From    uint64    `json:"from,omitempty"` // the checkpoint it restarted from; 0: from scratch
	// Sliced is the time gang rotations held this run frozen (AddSliced).
	Sliced time.Duration `json:"sliced,omitempty"`
}

// MaxRuns bounds the attempts a record lists.
const MaxRuns = 32

// AppendRun adds run to runs; beyond MaxRuns it drops the oldest after the
// first, as appendChange does.
func AppendRun(runs []Run, run Run) []Run {
	if len(runs)+1 > MaxRuns {
		runs = append(runs[:1:1], runs[len(runs)+2-MaxRuns:]...)
	}
	return append(runs, run)
}

// NewRecord starts a job's record in Waiting.
func NewRecord(id ID, key Key, d Description, now time.Time) Record {
	return Record{ID: id, Key: key, Desc: d, State: Waiting, Created: now, Updated: now,
		History: []StateChange{{State: Waiting, At: now}}}
}

// Transition returns the record moved to state to at time at, with why
// recorded (the reason of a failure or a cancel, or a note such as "retry
// on spares"). Moving into Starting counts an attempt. An illegal move
// returns an error wrapping ErrTransition and the record unchanged. The
// given record is never modified.
func Transition(r Record, to State, at time.Time, why string) (Record, error) {
	if !CanTransition(r.State, to) {
		return r, fmt.Errorf("%w: job %s from %s to %s", ErrTransition, r.ID, r.State, to)
	}
	if len(why) > MaxReasonLen {
		why = why[:MaxReasonLen]
	}
	next := r
	next.State, next.Updated = to, at
	next.History = appendChange(r.History, StateChange{State: to, At: at, Reason: why})
	switch to {
	case Starting:
		next.Attempts++
		next.Starts++
	case Reserving:
		next.Matches++
		next.Starts = 0
	}
	if to.Terminal() {
		next.Reason = why
	}
	if p, ok := phaseOf(r.Phase(), to); ok {
		next = SwitchPhase(next, p, at, why)
	}
	return next, nil
}

// appendChange copies h with e appended; beyond MaxHistory it drops the
// oldest events after the first, which records when the job was submitted.
func appendChange(h []StateChange, e StateChange) []StateChange {
	out := make([]StateChange, 0, min(len(h)+1, MaxHistory))
	if len(h)+1 > MaxHistory {
		out = append(out, h[0])
		h = h[len(h)+2-MaxHistory:]
	}
	out = append(out, h...)
	return append(out, e)
}

// Since returns when the job entered its current state.
func (r Record) Since() time.Time {
	if len(r.History) == 0 {
		return r.Updated
	}
	return r.History[len(r.History)-1].At
}

// Check verifies a record read back from disk.
func (r Record) Check() error {
	if _, err := proto.ParseJobID(string(r.ID)); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if _, err := ParseState(string(r.State)); err != nil {
		return fmt.Errorf("record %s: %w", r.ID, err)
	}
	if r.Key != "" {
		if _, err := ParseKey(string(r.Key)); err != nil {
			return fmt.Errorf("record %s: %w", r.ID, err)
		}
	}
	if len(r.History) == 0 || len(r.History) > MaxHistory {
		return fmt.Errorf("record %s: history of %d events, want 1..%d", r.ID, len(r.History), MaxHistory)
	}
	if err := r.Desc.Validate(); err != nil {
		return fmt.Errorf("record %s: desc: %w", r.ID, err)
	}
	if len(r.Runs) > MaxRuns || len(r.Lost) > MaxLost {
		return fmt.Errorf("record %s: %d runs and %d lost copies, limits %d and %d", r.ID, len(r.Runs), len(r.Lost), MaxRuns, MaxLost)
	}
	if len(r.Unavailable) > MaxUnavailable || len(r.BadProgram) > MaxUnavailable {
		return fmt.Errorf("record %s: %d unavailable and %d bad-program hosts, limit %d", r.ID, len(r.Unavailable), len(r.BadProgram), MaxUnavailable)
	}
	if r.Plan != nil {
		if err := r.Plan.Check(); err != nil {
			return fmt.Errorf("record %s: %w", r.ID, err)
		}
	}
	return nil
}
