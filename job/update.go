package job

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Update is one thing a watcher of a job sees: a state change, a line of
// output tagged with its rank, the reservation's progress, or the job's
// end with its final record.
type Update struct {
	Kind    string  `json:"kind"` // "state", "output", "progress", "end"
	State   State   `json:"state,omitempty"`
	Rank    int     `json:"rank"`
	Replica int     `json:"replica"`
	Stream  string  `json:"stream,omitempty"`
	Line    string  `json:"line,omitempty"`
	Note    string  `json:"note,omitempty"`
	Record  *Record `json:"record,omitempty"`
	// Flood is where the placement stands, in a "progress" update.
	Flood *FloodSample `json:"flood,omitempty"`
}

// PeerRTT is a peer the agent's overlay knows, with its smoothed RTT (0
// until measured): the submitter's view of the hosts its flood may reach.
type PeerRTT struct {
	ID  peer.ID
	RTT time.Duration
	// Dead is a peer the overlay knows but has stopped counting on for a
	// while (a probe or a flood went unanswered): it is not waited for,
	// and its coming back is not the overlay learning a new peer.
	Dead bool
}

// Errors of the requests a submitter takes about its jobs.
var (
	// ErrUnknownJob: the submitter does not hold the job.
	ErrUnknownJob = errors.New("job: unknown job")
	// ErrNotStoppable and ErrNotResumable: the job is not in a state that
	// allows a stop with a checkpoint, or a resume.
	ErrNotStoppable = errors.New("job cannot be stopped with a checkpoint")
	ErrNotResumable = errors.New("job cannot be resumed")
	// ErrNotPreemptible: a host asked to swap out a job it does not run.
	ErrNotPreemptible = errors.New("job cannot be preempted")
)

// ReasonRestarted is the reason given to jobs that were not over when
// their submitter's agent stopped and could not be taken back.
const ReasonRestarted = "agent restarted"

// OutputName is the name an output file of a rank comes back under:
// "result.txt" of rank 3 is "result.txt.3".
func OutputName(name string, rank int) string { return fmt.Sprintf("%s.%d", name, rank) }

// PlainFileName refuses names that could leave the job folder.
func PlainFileName(name string) error {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return fmt.Errorf("file name %q is not a plain name", name)
	}
	return nil
}

// ProcTag names a process in output, as `zorilla submit` prints it: its
// rank, and ".k" for copy k > 0 of a replicated rank.
func ProcTag(rank, replica int) string {
	if replica == 0 {
		return fmt.Sprint(rank)
	}
	return fmt.Sprintf("%d.%d", rank, replica)
}
