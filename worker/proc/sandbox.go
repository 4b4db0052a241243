package proc

import "fmt"

// Resources are the limits of a Sandbox's cgroup, shared by all its
// processes. A zero field sets no limit.
type Resources struct {
	// MemoryBytes bounds the memory (resident and page cache, and swap)
	// of all the processes together: past it the kernel's OOM killer
	// ends one of them.
	MemoryBytes int64
	// Pids bounds the processes (and threads) alive at once: past it
	// fork and clone fail with EAGAIN.
	Pids int64
	// CPUs bounds CPU time to this many cores' worth (CFS bandwidth).
	CPUs float64
}

func (r Resources) validate() error {
	if r.MemoryBytes < 0 || r.Pids < 0 || r.CPUs < 0 {
		return fmt.Errorf("proc: sandbox resources %+v: limits must not be negative", r)
	}
	return nil
}

// Events are what the kernel did to a Sandbox's processes: counts since the
// sandbox was made.
type Events struct {
	OOMKills  uint64 // processes the OOM killer ended for exceeding MemoryBytes
	PidsLimit uint64 // forks refused for exceeding Pids
}

// Isolation says what a Runner's sandboxes enforce on this machine, for
// the agent's start message and `zorilla id`. Each field is a short
// phrase; one that starts with "none" or "host" means the protection is
// off, and says why.
type Isolation struct {
	Users   string // e.g. "own uid per job from 1900000000-1900065535"
	Cgroups string // e.g. "v1 (memory, pids, cpu)" or "none: ..."
	Freezer string // how Freeze stops a job: "cgroup v2 (...)" or "signals (...)"
	Network string // e.g. "own namespace, loopback only" or "host: ..."
	// OwnNetwork is set when each job gets its own network namespace
	// with only loopback.
	OwnNetwork bool
	// Err is set when the sandbox was asked for but cannot work (e.g. the
	// user ID lock folder is unusable): no process can start.
	Err error
}

// String gives the isolation on one line.
func (i Isolation) String() string {
	return fmt.Sprintf("users: %s; cgroups: %s; freezer: %s; network: %s", i.Users, i.Cgroups, i.Freezer, i.Network)
}
