package proto

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/wire"
)

// Requirements are what a host must have to take part in a job.
type Requirements struct {
	OS        string   `json:"os,omitempty" yaml:"os,omitempty"`                 // GOOS, e.g. "linux"; empty: any
	Arch      string   `json:"arch,omitempty" yaml:"arch,omitempty"`             // GOARCH, e.g. "amd64"; empty: any
	MinCores  int      `json:"min_cores,omitempty" yaml:"min_cores,omitempty"`   // cores the host must offer in all
	MinMemory int64    `json:"min_memory,omitempty" yaml:"min_memory,omitempty"` // bytes of memory the host must offer
	Labels    []string `json:"labels,omitempty" yaml:"labels,omitempty"`         // every label ("gpu", "site=nancy") must be set on the host
}

// Need is what a job advert asks for. It travels as the advert's body.
type Need struct {
	Job JobID `json:"job"`
	N   int   `json:"n"` // processes
	// Min is a malleable job's least size (it runs with any number of
	// processes from Min to N, resized at its checkpoints); 0 for a rigid
	// job. A host whose slots such a job holds may ask it to give way to
	// a job that waits for them.
	Min int `json:"min,omitempty"`
	// Grow marks the advert of a malleable job that runs already and
	// looks for N more processes: a host serves every job waiting to
	// start before it, and such a job's offers are given back to any of
	// them that asks.
	Grow bool         `json:"grow,omitempty"`
	R    int          `json:"r"` // replicas of each process, on distinct hosts
	Req  Requirements `json:"req"`
	// MemPerProc is the memory one process declares it uses (submit
	// --mem-per-proc): a host offering c processes holds
	// max(Req.MinMemory, c×MemPerProc). 0: nothing declared.
	MemPerProc int64 `json:"mem_per_proc,omitempty"`
	// Priority is the submitter's priority (submit --priority): a host
	// honours it up to its owner's cap (worker.Policy.HonouredPriority),
	// and a job of higher honoured priority may preempt lower ones there.
	Priority int `json:"priority,omitempty"`
	// SwapSlice is the job's swap slice (job.Description.SwapSlice): once
	// it has run this long on a host since it last started there, a job
	// of equal priority waiting for its memory may swap it out. Zero:
	// never.
	SwapSlice time.Duration `json:"swap_slice,omitempty"`
	// YieldTo is set on the advert of a job resumed after a host swapped
	// it out for job YieldTo: every host of the run, whether it planned
	// the swap or not, serves YieldTo first (the worker's waiting line).
	// It only holds this job back, so a host may trust it. YieldWith are
	// the other jobs it yields to: the rest of the set let in at that
	// turn and the jobs that waited there with it.
	YieldTo   JobID   `json:"yield_to,omitempty"`
	YieldWith []JobID `json:"yield_with,omitempty"`
	// Deadline is the job's scheduling deadline: how long its submitter
	// may look for hosts while holding the offers it has. A host keeps its
	// offer's lease that long and a margin to commit, within its own
	// bound; 0 from older submitters: the host's default.
	Deadline time.Duration `json:"deadline,omitempty"`
	// PMI says the processes are MPICH ranks (submit --pmi), which open
	// TCP connections to each other on the hosts' network; Spread that
	// the job is placed one process per host first (-a spread; sent with
	// PMI only). A host
	// whose jobs see only loopback declines such a job unless it could
	// hold every process itself (DeclineNetwork).
	PMI    bool `json:"pmi,omitempty"`
	Spread bool `json:"spread,omitempty"`
}

// MaxDeadline bounds a job's scheduling deadline.
const MaxDeadline = 24 * time.Hour

// MaxYieldWith bounds Need.YieldWith and PreemptMsg.With: the other jobs
// a job swapped out yields to, the earliest of a host's waiting line.
const MaxYieldWith = 16

// checkYieldSet checks the jobs a swapped-out job yields to besides the
// first (first: whether there is one).
func checkYieldSet(field string, first bool, with []JobID) error {
	if len(with) > 0 && !first {
		return fmt.Errorf("%s: a set without the job it was swapped out for", field)
	}
	if len(with) > MaxYieldWith {
		return fmt.Errorf("%s: %d jobs, at most %d", field, len(with), MaxYieldWith)
	}
	for _, j := range with {
		if _, err := ParseJobID(string(j)); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
	}
	return nil
}

// MaxNeedSize bounds an encoded Need; it must fit in an advert's body.
const MaxNeedSize = 4 << 10

// EncodeNeed encodes a Need for an advert body.
func EncodeNeed(n Need) ([]byte, error) {
	b, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("job: encode need: %w", err)
	}
	if len(b) > MaxNeedSize {
		return nil, fmt.Errorf("job: need of %d bytes exceeds %d", len(b), MaxNeedSize)
	}
	return b, nil
}

// DecodeNeed decodes and checks an advert body. It never trusts the sender:
// sizes and counts are bounded.
func DecodeNeed(b []byte) (Need, error) {
	var n Need
	if len(b) > MaxNeedSize {
		return n, fmt.Errorf("job: need of %d bytes exceeds %d", len(b), MaxNeedSize)
	}
	if err := wire.DecodeJSON(b, &n); err != nil {
		return n, fmt.Errorf("job: decode need: %w", err)
	}
	// An empty list means none, as an absent one does (and encodes as one).
	if len(n.Req.Labels) == 0 {
		n.Req.Labels = nil
	}
	if len(n.YieldWith) == 0 {
		n.YieldWith = nil
	}
	if err := n.Validate(); err != nil {
		return n, fmt.Errorf("job: need: %w", err)
	}
	return n, nil
}

// Validate checks a Need's bounds: a well-formed job ID, 1 <= n, 1 <= r,
// n×r within MaxProcs, and valid requirements.
func (n Need) Validate() error {
	if _, err := ParseJobID(string(n.Job)); err != nil {
		return err
	}
	if n.N < 1 || n.R < 1 || n.N > MaxProcs || n.R > MaxReplicas || n.N*n.R > MaxProcs {
		return fmt.Errorf("out of range: job %q n=%d r=%d (1 <= r <= %d, n*r <= %d)",
			n.Job, n.N, n.R, MaxReplicas, MaxProcs)
	}
	if n.Min < 0 || n.Min > n.N || (n.Min > 0 || n.Grow) && n.R != 1 {
		return fmt.Errorf("out of range: job %q min=%d n=%d r=%d (a malleable job has 1 <= min <= n and r = 1)", n.Job, n.Min, n.N, n.R)
	}
	if err := CheckMemPerProc(n.MemPerProc); err != nil {
		return err
	}
	if err := CheckPriority(n.Priority); err != nil {
		return err
	}
	if err := CheckSwapSlice(n.SwapSlice); err != nil {
		return err
	}
	if n.YieldTo != "" {
		if _, err := ParseJobID(string(n.YieldTo)); err != nil {
			return fmt.Errorf("yield_to: %w", err)
		}
	}
	if err := checkYieldSet("yield_with", n.YieldTo != "", n.YieldWith); err != nil {
		return err
	}
	if n.Deadline < 0 || n.Deadline > MaxDeadline {
		return fmt.Errorf("deadline: must be 0..%v, got %v", MaxDeadline, n.Deadline)
	}
	return n.Req.Validate()
}

// Bounds on what one job may ask for.
const (
	MaxProcs    = 100000
	MaxReplicas = 16
	MaxCores    = 1 << 16 // a requirement above this is a typo, not a machine
	MaxLabels   = 32
	MaxLabelLen = 128
	maxNameLen  = 32 // GOOS and GOARCH names are short
)

// Validate checks requirements from a user or a peer; errors name the field.
func (r Requirements) Validate() error {
	if err := checkName("os", r.OS); err != nil {
		return err
	}
	if err := checkName("arch", r.Arch); err != nil {
		return err
	}
	if r.MinCores < 0 || r.MinCores > MaxCores {
		return fmt.Errorf("require: cores: must be 0..%d, got %d", MaxCores, r.MinCores)
	}
	if r.MinMemory < 0 || r.MinMemory > MaxSize {
		return fmt.Errorf("require: mem: must be 0..%d bytes, got %d", MaxSize, r.MinMemory)
	}
	if len(r.Labels) > MaxLabels {
		return fmt.Errorf("require: labels: at most %d, got %d", MaxLabels, len(r.Labels))
	}
	for _, l := range r.Labels {
		if err := CheckLabel(l); err != nil {
			return err
		}
	}
	return nil
}

// checkName accepts what GOOS and GOARCH look like: lower-case letters and
// digits.
func checkName(field, s string) error {
	if len(s) > maxNameLen {
		return fmt.Errorf("require: %s: at most %d characters, got %d", field, maxNameLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return fmt.Errorf("require: %s: %q must be lower-case letters and digits", field, s)
		}
	}
	return nil
}

// CheckLabel checks one host or job label: 1 to 128 printable ASCII
// characters without spaces or commas (a comma separates flag values).
func CheckLabel(l string) error {
	if l == "" || len(l) > MaxLabelLen {
		return fmt.Errorf("require: label: must be 1..%d characters, got %d", MaxLabelLen, len(l))
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; c <= ' ' || c > '~' || c == ',' {
			return fmt.Errorf("require: label %q: printable ASCII without spaces or commas", l)
		}
	}
	return nil
}

// Bounds on a job's priority (submit --priority). The range is small on
// purpose: a priority is a rank among a grid's users, not a number to
// outbid each other with, and owners cap what they honour anyway.
const (
	MinPriority     = -100
	MaxPriority     = 100
	DefaultPriority = 0
)

// CheckPriority refuses a priority outside MinPriority..MaxPriority.
func CheckPriority(p int) error {
	if p < MinPriority || p > MaxPriority {
		return fmt.Errorf("priority: must be %d..%d, got %d", MinPriority, MaxPriority, p)
	}
	return nil
}

// CheckMemPerProc refuses a negative or absurd per-process memory.
func CheckMemPerProc(m int64) error {
	if m < 0 || m > MaxSize {
		return fmt.Errorf("mem_per_proc: must be 0..%d bytes, got %d", MaxSize, m)
	}
	return nil
}

// MaxTimeout bounds a job's wall-clock limit (a commit's Timeout).
const MaxTimeout = 30 * 24 * time.Hour

// Bounds on a swap slice: the shortest is a second (a switch costs a
// checkpoint and a restart, a second or more); a slice longer than the
// longest job is "never".
const (
	MinSwapSlice = time.Second
	MaxSwapSlice = MaxTimeout
)

// CheckSwapSlice refuses a swap slice that is negative, or positive and
// shorter than MinSwapSlice, or longer than MaxSwapSlice.
func CheckSwapSlice(d time.Duration) error {
	if d != 0 && (d < MinSwapSlice || d > MaxSwapSlice) {
		return fmt.Errorf("swap_slice: must be 0 (never swapped for a job of equal priority) or %v..%v, got %v",
			MinSwapSlice, MaxSwapSlice, d)
	}
	return nil
}
