package proc

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Credential is the user and group processes run as.
type Credential struct {
	UID, GID uint32
}

// Config configures a Runner.
type Config struct {
	// KillGrace is the time between SIGTERM and SIGKILL when a process
	// group is killed.
	KillGrace time.Duration
	// StartTimeout bounds how long a process may take to reach its
	// program once forked (the limits shim is a re-executed agent binary).
	StartTimeout time.Duration
	// SettleTimeout bounds how long, after a process exits, the rest of its
	// group may take to vanish and its output pipes to close. Only a
	// process that left the group (setsid) and kept the pipes open makes
	// the runner wait that long; it is then reported in Exit.Err.
	SettleTimeout time.Duration
	// MaxLineBytes bounds one line of output; longer lines are split.
	MaxLineBytes int
	// TailLines and TailBytes bound the last lines kept for Exit.Tail.
	TailLines int
	TailBytes int
	// Path is the PATH of the minimal environment.
	Path string
	// RunAs, when set and the agent runs as root, is the unprivileged user
	// and group processes run as (supplementary groups are dropped and
	// no_new_privs is set, so setuid programs cannot regain root). When
	// the agent is not root it is ignored: processes run as the agent's
	// own user. With RunAs, every parent folder of Spec.Dir and the
	// program must be reachable by that user. Off by default, since a
	// suitable user differs between machines (e.g. "nobody", 65534).
	RunAs *Credential
	// AutoUsers, when set and the agent runs as root, gives each Sandbox
	// a user and group ID of its own from this range, held while the
	// sandbox lives (see NewSandbox). It takes precedence over RunAs.
	AutoUsers *UIDRange
	// UIDLockDir holds one lock file per user ID of AutoUsers in use, so
	// that two agents on one machine never hand out the same ID. It must
	// be the same for every agent of the machine.
	UIDLockDir string
	// Cgroups puts each Sandbox's processes in a cgroup of their own with
	// its Resources as limits, when the agent can write cgroups (v2 with
	// the memory, pids and cpu controllers, else v1's).
	Cgroups bool
	// CgroupName names the folder, below the agent's own cgroup, that
	// holds the cgroups of this runner's sandboxes. Runners of agents that
	// share a process or a cgroup need different names: NewRunner removes
	// what is left in it.
	CgroupName string
	// CgroupParent, when set, is the cgroup (a clean absolute path inside
	// the hierarchy, as /proc/self/cgroup shows one: "/zorilla-jobs") that
	// holds the CgroupName folder instead of the agent's own cgroup. It
	// must exist in every hierarchy the runner uses. Limits set on it bind
	// the jobs together and not the agent: a memory bound for the jobs of
	// a host, or of an experiment, that never pages the agent out. An
	// agent that cannot write cgroups there runs none (see Isolation).
	CgroupParent string
	// IsolateNetwork runs each Sandbox's processes in a network namespace
	// of their own with only loopback up, where the kernel allows it.
	IsolateNetwork bool
	// Subreaper makes the agent adopt the orphans of its processes
	// (PR_SET_CHILD_SUBREAPER), so that it can reap what is left of a
	// process group even where init does not reap (in containers, where
	// the agent may be PID 1). It applies to the whole agent process.
	Subreaper bool
}

// DefaultConfig returns the defaults for a Runner.
func DefaultConfig() Config {
	return Config{
		// 5s: long enough for a program to flush output or write a
		// checkpoint on SIGTERM, short enough that a cancel feels prompt.
		KillGrace: 5 * time.Second,
		// 10s: re-executing a large agent binary on a loaded machine takes
		// tens of milliseconds; a shim stuck for 10s is broken.
		StartTimeout: 10 * time.Second,
		// 5s: dying processes vanish in milliseconds; this only bounds the
		// wait for a process that escaped its group and holds the pipes.
		SettleTimeout: 5 * time.Second,
		// 16 KiB: longer than any ordinary log line, and bounds the
		// memory of a process's output to a few such buffers.
		MaxLineBytes: 16 << 10,
		// 100 lines, 64 KiB: enough context for an error report, small
		// enough to keep for every process of a big job.
		TailLines: 100,
		TailBytes: 64 << 10,
		// The usual system folders; a job that needs more sets PATH in Env.
		Path: "/usr/local/bin:/usr/bin:/bin",
		// On: leaving no process behind matters more than the side effect
		// of adopting orphans of the agent's own children.
		Subreaper: true,
		// The sandbox is on wherever the kernel allows it; the agent
		// sets AutoUsers when it runs as root.
		UIDLockDir:     "/run/zorilla/uids",
		Cgroups:        true,
		CgroupName:     "zorilla",
		IsolateNetwork: true,
	}
}

func (c Config) validate() error {
	switch {
	case c.KillGrace <= 0:
		return fmt.Errorf("proc: config: KillGrace %v must be positive", c.KillGrace)
	case c.StartTimeout <= 0:
		return fmt.Errorf("proc: config: StartTimeout %v must be positive", c.StartTimeout)
	case c.SettleTimeout <= 0:
		return fmt.Errorf("proc: config: SettleTimeout %v must be positive", c.SettleTimeout)
	case c.MaxLineBytes < 16:
		return fmt.Errorf("proc: config: MaxLineBytes %d must be at least 16", c.MaxLineBytes)
	case c.TailLines < 1:
		return fmt.Errorf("proc: config: TailLines %d must be at least 1", c.TailLines)
	case c.TailBytes < c.MaxLineBytes:
		return fmt.Errorf("proc: config: TailBytes %d is below MaxLineBytes %d", c.TailBytes, c.MaxLineBytes)
	case c.Path == "":
		return errors.New("proc: config: Path is empty")
	case c.RunAs != nil && c.RunAs.UID == 0:
		return errors.New("proc: config: RunAs uid 0 is root, not an unprivileged user")
	case c.AutoUsers != nil:
		if err := c.AutoUsers.validate(); err != nil {
			return err
		}
		if !filepath.IsAbs(c.UIDLockDir) || filepath.Clean(c.UIDLockDir) != c.UIDLockDir {
			return fmt.Errorf("proc: config: UIDLockDir %q is not a clean absolute path", c.UIDLockDir)
		}
	}
	if p := c.CgroupParent; p != "" && (!strings.HasPrefix(p, "/") || filepath.Clean(p) != p || strings.ContainsRune(p, '\n')) {
		return fmt.Errorf("proc: config: CgroupParent %q is not a clean absolute cgroup path", p)
	}
	if c.Cgroups && !validName(c.CgroupName) {
		return fmt.Errorf("proc: config: CgroupName %q: want 1-128 letters, digits, '-', '_', '.', not starting with '.'", c.CgroupName)
	}
	return nil
}

// UIDRange is a range of user IDs: First, First+1, ... First+Count-1.
type UIDRange struct {
	First, Count uint32
}

// DefaultUIDRange is the range AutoUsers takes by default: 65536 IDs from
// 1900000000. It lies in the part of the 32-bit space that no distribution
// allocates (systemd's table: regular users below 60000, dynamic users
// 61184-65519, container ranges 524288-1879048191) and below 2^31, which
// some tools mishandle; subordinate ranges (/etc/subuid) usually start at
// 100000 and stay far below it. 65536 running jobs is more than any
// machine holds.
var DefaultUIDRange = UIDRange{First: 1900000000, Count: 65536}

func (u UIDRange) validate() error {
	last := uint64(u.First) + uint64(u.Count) - 1
	switch {
	case u.Count == 0:
		return errors.New("proc: config: the user ID range is empty")
	case u.First < 1000:
		return fmt.Errorf("proc: config: user ID range %v starts among the system users (below 1000)", u)
	case last >= 1<<32-1: // (uid_t)-1 means "no change" to the kernel
		return fmt.Errorf("proc: config: user ID range %v ends past 4294967294", u)
	}
	return nil
}

// String gives the range as "FIRST-LAST".
func (u UIDRange) String() string {
	return fmt.Sprintf("%d-%d", u.First, uint64(u.First)+uint64(u.Count)-1)
}

// ParseUIDRange reads "FIRST-LAST", e.g. "1900000000-1900065535".
func ParseUIDRange(s string) (UIDRange, error) {
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.ParseUint(a, 10, 32)
	last, err2 := strconv.ParseUint(b, 10, 32)
	if !ok || err1 != nil || err2 != nil || last < first {
		return UIDRange{}, fmt.Errorf("user ID range %q is not FIRST-LAST with FIRST <= LAST", s)
	}
	if last-first+1 > 1<<32-1 {
		return UIDRange{}, fmt.Errorf("user ID range %q is too large", s)
	}
	u := UIDRange{First: uint32(first), Count: uint32(last - first + 1)}
	return u, u.validate()
}

// validName accepts a cgroup folder name: 1-128 letters, digits, '-',
// '_' and '.', not starting with '.'.
func validName(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
