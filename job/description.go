package job

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Description is everything a user says about a job (CrossGrid's JDL, in
// Zorilla's terms). It comes from `zorilla submit` flags (NewDescription)
// or from a JSON or YAML job file (LoadDescription), and is checked by
// Validate before anything is flooded.
type Description struct {
	Executable string   // program to run, a file on the submitter's machine
	Args       []string // arguments given to every rank
	Nodes      int      // n: MPI processes (ranks); a malleable job's largest size
	// MinNodes is a malleable job's least size (-n MIN:MAX, malleable.go);
	// 0 for a rigid job of Nodes ranks. ResizeEvery is the least time
	// between two of its resizes (DefaultResizeEvery when malleable).
	MinNodes    int
	ResizeEvery time.Duration
	Replicas    int                // r: copies of each rank, on distinct hosts
	Strategy    Strategy           // spread or concentrate
	Require     proto.Requirements // what every host must have
	Prefer      Preference         // rank preference: which offers are used first
	Inputs      []string           // files staged into each process's job folder, by base name
	Outputs     []string           // files, folders or globs, in each rank's working folder, brought back when the job ends (as NAME.<rank>)
	Env         map[string]string  // extra environment of every process
	Stdout      string             // file in the submitter's job folder holding the tagged stdout of all ranks
	Stderr      string             // same for stderr
	Timeout     time.Duration      // wall-clock limit of the run, from start to end
	Deadline    time.Duration      // scheduling deadline: how long to look for enough hosts
	// Retries is how many times a job that lost a host while it ran (and
	// with it the last copy of some rank) is started again elsewhere. Job
	// files and NewDescription default it to DefaultRetries; zero means
	// the first loss ends the job.
	Retries int
	// CheckpointEvery makes Comm.Checkpoint take a checkpoint only when
	// this long has passed since the last one; 0: at every call.
	CheckpointEvery time.Duration
	// PMI runs an MPICH program: each host's agent serves its ranks the
	// PMI-1 protocol (package worker/pmi) instead of Zorilla's MPI
	// socket. Such a job has one copy per rank (see checkPMI).
	PMI bool
	// MemPerProc is the memory each process declares it uses (bytes);
	// hosts hold slots × MemPerProc for the job and co-schedule jobs
	// only while what they hold and use fits (worker.FitsMemory).
	MemPerProc int64
	// Priority ranks the job against others on shared hosts
	// (MinPriority..MaxPriority, default 0); see Need.Priority.
	Priority int
	// SwapSlice is how long the job runs on hosts whose memory it holds
	// before a job of equal priority that waits for that memory may swap
	// it out by checkpoint (submit --swap-slice; job files and
	// NewDescription default it to DefaultSwapSlice). Zero: it is never
	// swapped out for a job of equal priority, and swaps none out itself.
	SwapSlice time.Duration
}

// Defaults filled in by SetDefaults.
const (
	// DefaultTimeout is one day: long enough for real runs, short enough
	// that a forgotten job does not hold hosts for ever.
	DefaultTimeout = 24 * time.Hour
	// DefaultDeadline is two minutes: Zorilla's doubling waits (1 s, 2 s,
	// 4 s, ...) have flooded to radius 7 by then; a job that needs a wider
	// search says so.
	DefaultDeadline = 2 * time.Minute
	// DefaultStdout and DefaultStderr name the captured streams in the
	// submitter's job folder.
	DefaultStdout = "stdout"
	DefaultStderr = "stderr"
	// DefaultRetries restarts a job twice after host losses: a third loss
	// in one job says more about the job or the network than bad luck.
	DefaultRetries = 2
	// DefaultSwapSlice is ten minutes: a swap by checkpoint costs a stop
	// at the program's next checkpoint, the memory written out, and a
	// restart (flood, place, stage, read the checkpoint back): 1-3 s on
	// loopback, tens of seconds for gigabytes per host. Ten minutes keeps
	// that to a few per cent of the job's time, as the seed's long
	// slices do, and still lets two jobs alternate within an hour.
	DefaultSwapSlice = 10 * time.Minute
)

// Bounds on a description, so that a job file or a record can never make
// an agent hold or send without limit.
const (
	MaxArgs       = 1024
	MaxArgsBytes  = 256 << 10 // well under Linux's ARG_MAX
	MaxFiles      = 256       // inputs, and outputs
	MaxPathLen    = 4096
	MaxEnv        = 256
	MaxDeadline   = proto.MaxDeadline
	MaxRetries    = 100
	minTimeLimits = time.Second
)

// NewDescription returns a description for the common command-line case,
// with every default set; the CLI then applies its other flags and calls
// Validate.
func NewDescription(executable string, args []string, nodes int) Description {
	d := Description{Executable: executable, Args: args, Nodes: nodes, Retries: DefaultRetries, SwapSlice: DefaultSwapSlice}
	d.SetDefaults()
	return d
}

// SetDefaults fills the fields left zero: one replica, DefaultStrategy, the
// RTT preference, DefaultStdout/DefaultStderr, DefaultTimeout and
// DefaultDeadline.
func (d *Description) SetDefaults() {
	if d.Replicas == 0 {
		d.Replicas = 1
	}
	if d.Strategy == "" {
		d.Strategy = DefaultStrategy
	}
	if d.Prefer == "" {
		d.Prefer = PreferRTT
	}
	if d.Stdout == "" {
		d.Stdout = DefaultStdout
	}
	if d.Stderr == "" {
		d.Stderr = DefaultStderr
	}
	if d.Timeout == 0 {
		d.Timeout = DefaultTimeout
	}
	if d.Deadline == 0 {
		d.Deadline = DefaultDeadline
	}
	if d.Malleable() && d.ResizeEvery == 0 {
		d.ResizeEvery = DefaultResizeEvery
	}
}

// Need is what the job's adverts ask for. The placement is told only for
// an MPICH job, whose hosts' network settings decide whether they can run
// it.
func (d Description) Need(id ID) proto.Need {
	lo, _ := d.SizeRange()
	if !d.Malleable() {
		lo = 0
	}
	return proto.Need{Job: id, N: d.Nodes, Min: lo, R: d.Replicas, Req: d.Require, MemPerProc: d.MemPerProc, Priority: d.Priority,
		SwapSlice: d.SwapSlice, PMI: d.PMI, Spread: d.PMI && d.Strategy == Spread}
}

// Validate checks every field and bound. The error names the field:
// "nodes: must be >= 1, got 0".
func (d Description) Validate() error {
	checks := []func() error{d.checkProgram, d.checkCounts, d.checkChoices, d.Require.Validate,
		d.checkFiles, d.checkEnv, d.checkStreams, d.checkTimes, d.checkPMI, d.checkMalleable}
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

func (d Description) checkProgram() error {
	if err := checkPath("executable", d.Executable); err != nil {
		return err
	}
	if len(d.Args) > MaxArgs {
		return fmt.Errorf("args: at most %d, got %d", MaxArgs, len(d.Args))
	}
	total := 0
	for i, a := range d.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("args[%d]: contains NUL", i)
		}
		total += len(a) + 1
	}
	if total > MaxArgsBytes {
		return fmt.Errorf("args: %d bytes in all, limit %d", total, MaxArgsBytes)
	}
	return nil
}

func (d Description) checkCounts() error {
	if err := checkRange("nodes", d.Nodes, 1, proto.MaxProcs); err != nil {
		return err
	}
	if err := checkRange("replicas", d.Replicas, 1, proto.MaxReplicas); err != nil {
		return err
	}
	if d.Nodes*d.Replicas > proto.MaxProcs {
		return fmt.Errorf("nodes*replicas: must be <= %d, got %d", proto.MaxProcs, d.Nodes*d.Replicas)
	}
	if d.CheckpointEvery < 0 || d.CheckpointEvery > proto.MaxTimeout {
		return fmt.Errorf("checkpoint_every: must be between 0 and %v, got %v", proto.MaxTimeout, d.CheckpointEvery)
	}
	if err := proto.CheckMemPerProc(d.MemPerProc); err != nil {
		return err
	}
	if err := proto.CheckPriority(d.Priority); err != nil {
		return err
	}
	return checkRange("retries", d.Retries, 0, MaxRetries)
}

func (d Description) checkChoices() error {
	if _, err := ParseStrategy(string(d.Strategy)); err != nil {
		return err
	}
	_, err := ParsePreference(string(d.Prefer))
	return err
}

func (d Description) checkFiles() error {
	if len(d.Inputs) > MaxFiles || len(d.Outputs) > MaxFiles {
		return fmt.Errorf("inputs/outputs: at most %d each, got %d and %d", MaxFiles, len(d.Inputs), len(d.Outputs))
	}
	staged := map[string]string{filepath.Base(d.Executable): "executable"}
	for i, in := range d.Inputs {
		field := fmt.Sprintf("inputs[%d]", i)
		if err := checkPath(field, in); err != nil {
			return err
		}
		base := filepath.Base(in)
		if prev, dup := staged[base]; dup {
			return fmt.Errorf("%s: %q lands in the job folder as %q, like %s", field, in, base, prev)
		}
		staged[base] = field
	}
	seen := map[string]bool{}
	for i, out := range d.Outputs {
		field := fmt.Sprintf("outputs[%d]", i)
		if err := checkLocal(field, out); err != nil {
			return err
		}
		if seen[filepath.Clean(out)] {
			return fmt.Errorf("%s: %q listed twice", field, out)
		}
		seen[filepath.Clean(out)] = true
	}
	return nil
}

func (d Description) checkEnv() error {
	if len(d.Env) > MaxEnv {
		return fmt.Errorf("env: at most %d variables, got %d", MaxEnv, len(d.Env))
	}
	names := make([]string, 0, len(d.Env))
	for k := range d.Env {
		names = append(names, k)
	}
	sort.Strings(names) // report the same error every time
	for _, k := range names {
		if err := checkEnv(k, d.Env[k]); err != nil {
			return err
		}
	}
	return nil
}

func (d Description) checkStreams() error {
	if err := checkLocal("stdout", d.Stdout); err != nil {
		return err
	}
	if err := checkLocal("stderr", d.Stderr); err != nil {
		return err
	}
	if filepath.Clean(d.Stdout) == filepath.Clean(d.Stderr) {
		return fmt.Errorf("stderr: %q is the same file as stdout", d.Stderr)
	}
	return nil
}

func (d Description) checkTimes() error {
	if d.Timeout < minTimeLimits || d.Timeout > proto.MaxTimeout {
		return fmt.Errorf("timeout: must be between %v and %v, got %v", minTimeLimits, proto.MaxTimeout, d.Timeout)
	}
	if d.Deadline < minTimeLimits || d.Deadline > MaxDeadline {
		return fmt.Errorf("deadline: must be between %v and %v, got %v", minTimeLimits, MaxDeadline, d.Deadline)
	}
	return proto.CheckSwapSlice(d.SwapSlice)
}

// checkRange says which bound a count breaks: "nodes: must be >= 1, got 0".
func checkRange(field string, v, lo, hi int) error {
	if v < lo {
		return fmt.Errorf("%s: must be >= %d, got %d", field, lo, v)
	}
	if v > hi {
		return fmt.Errorf("%s: must be <= %d, got %d", field, hi, v)
	}
	return nil
}

// checkPath accepts a non-empty path of bounded length without NUL.
func checkPath(field, p string) error {
	if p == "" {
		return fmt.Errorf("%s: required", field)
	}
	if len(p) > MaxPathLen || strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("%s: must be under %d bytes with no NUL", field, MaxPathLen)
	}
	return nil
}

// checkLocal accepts a relative path that stays inside its folder: no
// "..", not absolute, not empty.
func checkLocal(field, p string) error {
	if err := checkPath(field, p); err != nil {
		return err
	}
	if !filepath.IsLocal(p) || filepath.Clean(p) == "." {
		return fmt.Errorf("%s: %q must be a relative path inside the job folder", field, p)
	}
	return nil
}
