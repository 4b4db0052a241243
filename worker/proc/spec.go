package proc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Names of the variables every process finds in its environment, set from
// its Spec. They cannot be set through Spec.Env.
const (
	EnvJob     = "ZORILLA_JOB"     // Spec.Job
	EnvRank    = "ZORILLA_RANK"    // Spec.Rank, 0 .. Size-1
	EnvSize    = "ZORILLA_SIZE"    // Spec.Size, the number of ranks
	EnvReplica = "ZORILLA_REPLICA" // Spec.Replica, 0 .. r-1
)

// Stream names given to an OutputFunc.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// Spec is one process to start.
type Spec struct {
	Job     string // job ID, for the environment and for errors
	Rank    int    // 0 <= Rank < Size
	Replica int    // which copy of the rank, >= 0
	Size    int    // number of ranks in the job, >= 1

	// Dir is the absolute path of the per-job folder the process runs in.
	// Start creates it if needed (several ranks of one job may share it);
	// Cleanup removes it.
	Dir string
	// Program is the absolute path of the executable, already staged and
	// verified (see blob.Store.CopyTo).
	Program string
	Args    []string // arguments after the program name
	// Env holds "KEY=value" entries added to a minimal environment (PATH,
	// HOME and TMPDIR set to Dir, the ZORILLA_* variables of the Spec). An
	// entry replaces a minimal one of the same key, except ZORILLA_JOB,
	// ZORILLA_RANK, ZORILLA_SIZE and ZORILLA_REPLICA, which are refused.
	Env []string

	Timeout time.Duration // wall-clock limit; 0 means none
	Limits  Limits        // resource limits; zero fields leave the agent's own
	// Sandbox, when set, is the job's sandbox (Runner.NewSandbox): the
	// process runs as its user, in its cgroup and, where it has one, in a
	// network namespace of its own.
	Sandbox *Sandbox
	// ExtraFile, when set, is passed to the program open (a PMI socket);
	// the environment variable ExtraFileEnv holds its descriptor number.
	// Start closes it once the child has it (or on failure).
	ExtraFile    *os.File
	ExtraFileEnv string
}

// Limits are the resource limits (setrlimit) of a process. A zero field
// leaves that limit as the agent has it; a limit is never raised above the
// agent's own hard limit. Limits apply to each process of a job on its own
// (CPU, memory, file size) or to the user it runs as (Processes).
type Limits struct {
	CPUSeconds  uint64 // RLIMIT_CPU: SIGXCPU at this many seconds of CPU, SIGKILL one second later
	MemoryBytes uint64 // RLIMIT_AS: address space, not resident memory
	OpenFiles   uint64 // RLIMIT_NOFILE
	Processes   uint64 // RLIMIT_NPROC: processes of the user; not enforced for root
	FileBytes   uint64 // RLIMIT_FSIZE: largest file the process may write (SIGXFSZ beyond)
}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }

// OutputFunc receives the output of a process, one call per line, without
// the newline. A line longer than Config.MaxLineBytes arrives in pieces of at
// most that size. Calls never overlap (stdout and stderr are serialized), are
// in order within a stream, and all happen before Process.Done is closed. The
// line is the callee's to keep. A slow OutputFunc slows the process down (its
// pipe fills); it is never dropped.
type OutputFunc func(stream string, line []byte)

// Runner starts processes.
type Runner interface {
	// Start starts the process of s in its own process group and returns
	// once it runs the program (or failed to). ctx bounds the life of the
	// process: when it ends, the process group is killed as by Kill. out may
	// be nil.
	Start(ctx context.Context, s Spec, out OutputFunc) (Process, error)
	// NewSandbox makes what the processes of one job share: their user,
	// their cgroup with res as limits, their network isolation. Close it
	// once they have all ended.
	NewSandbox(name string, res Resources) (*Sandbox, error)
	// Isolation says what sandboxes enforce on this machine.
	Isolation() Isolation
	// Close removes what the runner made for its sandboxes (the folder of
	// their cgroups). Call it after every sandbox is closed.
	Close() error
}

// Process is a started process and its process group.
type Process interface {
	// Pid is the process ID, which is also its process group ID.
	Pid() int
	// Wait blocks until the process has exited, no process of its group is
	// left, and its output has been delivered, and returns how it ended.
	// It may be called any number of times, from any goroutine.
	Wait() Exit
	// Kill ends the whole process group: SIGTERM, then SIGKILL after
	// Config.KillGrace. It returns at once; Wait waits for the end. Killing
	// a process that has already exited does nothing.
	Kill() error
	// Done is closed when Wait would return.
	Done() <-chan struct{}
}

// Exit is how a process ended.
type Exit struct {
	// Code is the exit status; for a process ended by a signal it is 128
	// plus the signal number, as a shell reports it.
	Code int
	// Signal names the signal that ended the process ("SIGKILL"), if any.
	Signal string
	// TimedOut is set when the wall-clock limit ended the process.
	TimedOut bool
	// Killed is set when Kill or the end of Start's ctx ended the process.
	Killed bool
	// OutOfMemory is set when the kernel's OOM killer ended a process of
	// the sandbox, for exceeding its memory limit, while this one ran.
	OutOfMemory bool
	// PidsLimit is set when a fork in the sandbox was refused, for
	// exceeding its process limit, while this process ran.
	PidsLimit bool
	// Err is a failure of the runner itself while watching the process
	// (for instance, members of the group that would not go away); nil
	// otherwise. It says nothing about the program's own success.
	Err error
	// Frozen is the time the process spent stopped by Freeze; it did not
	// count against Spec.Timeout.
	Frozen time.Duration
	// Tail holds the last lines of output (Config.TailLines and
	// Config.TailBytes bound it), for error reports.
	Tail []Line
}

// Success reports whether the program ran to the end with status 0.
func (e Exit) Success() bool {
	return e.Code == 0 && e.Signal == "" && !e.TimedOut && !e.Killed && !e.OutOfMemory && e.Err == nil
}

// String describes e for people: "exit 0", "killed by SIGKILL (timed out)".
func (e Exit) String() string {
	s := "exit " + strconv.Itoa(e.Code)
	if e.Signal != "" {
		s = "killed by " + e.Signal
	}
	switch {
	case e.TimedOut:
		s += " (timed out)"
	case e.Killed:
		s += " (killed)"
	case e.OutOfMemory:
		s += " (out of memory: the job exceeded its memory limit)"
	}
	if e.PidsLimit {
		s += " (the job reached its process limit: a fork failed)"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Line is one line of output, as kept in Exit.Tail.
type Line struct {
	Stream string // Stdout or Stderr
	Text   string
}

// validate checks s before anything is created or started.
func (s Spec) validate() error {
	switch {
	case s.Job == "" || strings.ContainsRune(s.Job, 0):
		return fmt.Errorf("proc: spec: job %q is empty or holds a NUL byte", s.Job)
	case s.Size < 1:
		return fmt.Errorf("proc: spec: size %d must be at least 1", s.Size)
	case s.Rank < 0 || s.Rank >= s.Size:
		return fmt.Errorf("proc: spec: rank %d out of 0..%d", s.Rank, s.Size-1)
	case s.Replica < 0:
		return fmt.Errorf("proc: spec: replica %d is negative", s.Replica)
	case s.Timeout < 0:
		return fmt.Errorf("proc: spec: timeout %v is negative", s.Timeout)
	}
	if err := checkDir(s.Dir); err != nil {
		return fmt.Errorf("proc: spec: %w", err)
	}
	if !filepath.IsAbs(s.Program) || strings.ContainsRune(s.Program, 0) {
		return fmt.Errorf("proc: spec: program %q is not an absolute path", s.Program)
	}
	for i, a := range s.Args {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("proc: spec: argument %d holds a NUL byte", i)
		}
	}
	return checkEnv(s.Env)
}

// checkDir refuses a job folder that is not a clean absolute path below /.
func checkDir(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || dir == "/" || strings.ContainsRune(dir, 0) {
		return fmt.Errorf("folder %q is not a clean absolute path below /", dir)
	}
	return nil
}

// reservedEnv are the keys a Spec's Env may not set.
var reservedEnv = map[string]bool{EnvJob: true, EnvRank: true, EnvSize: true, EnvReplica: true, shimEnv: true}

func checkEnv(env []string) error {
	for i, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "":
			return fmt.Errorf("proc: spec: env entry %d %q is not KEY=value", i, kv)
		case strings.ContainsRune(kv, 0):
			return fmt.Errorf("proc: spec: env entry %d (%s) holds a NUL byte", i, k)
		case reservedEnv[k]:
			return fmt.Errorf("proc: spec: env %s is set by the runner", k)
		}
	}
	return nil
}

// environ builds the environment of the process of s: the minimal one, then
// s.Env (later entries replace earlier ones of the same key), then the
// variables of the Spec. Order is kept stable for reproducible runs.
func (s Spec) environ(path string) []string {
	base := []string{"PATH=" + path, "HOME=" + s.Dir, "TMPDIR=" + s.Dir}
	own := []string{
		EnvJob + "=" + s.Job,
		EnvRank + "=" + strconv.Itoa(s.Rank),
		EnvSize + "=" + strconv.Itoa(s.Size),
		EnvReplica + "=" + strconv.Itoa(s.Replica),
	}
	all := append(append(base, s.Env...), own...)
	index := map[string]int{}
	out := make([]string, 0, len(all))
	for _, kv := range all {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := index[k]; ok {
			out[i] = kv
			continue
		}
		index[k] = len(out)
		out = append(out, kv)
	}
	return out
}
