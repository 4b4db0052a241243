package gang

import "fmt"

// Policy is how a host switches from one set of jobs to the next in the
// hybrid technique (the seed's Figure 5).
type Policy int

const (
	// Sequential checkpoints the outgoing set, waits until its processes
	// have ended (their memory is free), then restarts the incoming set:
	// never two sets in memory, at the cost of a switch as long as the
	// checkpoint and the restart together. The default: the hybrid
	// technique is used precisely because the sets do not fit together.
	Sequential Policy = iota
	// Overlapped checkpoints the outgoing set and restarts the incoming one
	// at once: a shorter switch, but both sets are briefly in memory and
	// their disk writes and reads compete.
	Overlapped
)

func (p Policy) String() string {
	switch p {
	case Sequential:
		return "sequential"
	case Overlapped:
		return "overlapped"
	}
	return fmt.Sprintf("policy(%d)", int(p))
}

// ParsePolicy reads a policy name, as flags and config files give it.
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "", "sequential":
		return Sequential, nil
	case "overlapped":
		return Overlapped, nil
	}
	return 0, fmt.Errorf("gang: swap policy %q: want sequential or overlapped", s)
}

// Step is one action of a switch.
type Step int

const (
	CheckpointOut Step = iota // the outgoing set takes a coordinated checkpoint and ends
	AwaitOutEnded             // wait until its processes are gone (memory freed)
	RestartIn                 // the incoming set restarts from its checkpoint
)

func (s Step) String() string {
	return [...]string{"checkpoint-out", "await-out-ended", "restart-in"}[s]
}

// SwitchPlan is the order of a switch's steps under p: steps in one inner
// slice run at once, the slices one after the other.
func SwitchPlan(p Policy) [][]Step {
	if p == Overlapped {
		return [][]Step{{CheckpointOut, RestartIn}, {AwaitOutEnded}}
	}
	return [][]Step{{CheckpointOut}, {AwaitOutEnded}, {RestartIn}}
}
