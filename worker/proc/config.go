package proc

import (
	"errors"
	"fmt"
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
	}
	return nil
}
