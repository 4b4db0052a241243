package worker

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/pbnjay/memory"

	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Policy is what the owner of a machine lends to the network (P2P-MPI's
// owner preferences, section 4.1): how many applications at once (J), how
// many processes each (P), the cores and memory lent in all, what the
// machine is (OS, arch, labels), and who may use it.
type Policy struct {
	MaxJobs  int      // J: applications running or reserved at once
	MaxProcs int      // P: processes of one application
	Cores    int      // cores lent in all; each process holds one
	Memory   int64    // bytes lent in all
	OS, Arch string   // what this machine is (GOOS, GOARCH)
	Labels   []string // owner-set labels a job may require ("gpu", "site=nancy")
	// Allow and Deny are the submitters' peer IDs read by LoadPeerList.
	// A nil Allow accepts every submitter that is not denied; an empty
	// non-nil Allow accepts nobody. Deny wins over Allow.
	Allow, Deny map[peer.ID]bool
	// Self is this agent's own peer ID. An agent is a worker for the jobs
	// submitted through it, so Self passes the allow list (not the deny
	// list, nor J, P or the requirements). Empty: no exception.
	Self peer.ID
	// MaxPriority is the highest job priority this owner honours from a
	// submitter without an entry in PriorityCaps (agent --max-priority;
	// default 0: priorities above 0 count as 0, so nothing preempts the
	// default jobs unless the owner says so). PriorityCaps gives a
	// submitter its own cap (agent --priority-cap PEER=N).
	MaxPriority  int
	PriorityCaps map[peer.ID]int
	// MaxSwapSlice caps a job's swap slice here (agent --max-swap-slice;
	// 0: no cap): a job that asked for a longer one may be swapped out by
	// checkpoint for a job of equal priority waiting for its memory once
	// it has run this long. A job that asked for none (submit
	// --swap-slice 0) is not swapped out for its equals here either.
	MaxSwapSlice time.Duration
	// SwapPolicy is how this host switches jobs swapped out by checkpoint
	// for their equals (agent --swap-policy): gang.Sequential (the
	// default) admits the incoming jobs once the outgoing ones have ended
	// and freed their memory; gang.Overlapped admits them at once, so
	// they restart while the outgoing ones checkpoint (a shorter switch,
	// the memory of both held meanwhile).
	SwapPolicy gang.Policy
	// IsolatesNetwork is set when jobs here see only loopback (agent
	// --job-network isolated): an MPICH job's ranks here could not reach
	// its ranks on other hosts.
	IsolatesNetwork bool
}

// SwapSlice is the swap slice this owner gives a job that asked for
// asked: asked capped by MaxSwapSlice; 0 (never) stays 0. Pure.
func (p Policy) SwapSlice(asked time.Duration) time.Duration {
	if asked <= 0 {
		return 0
	}
	if p.MaxSwapSlice > 0 {
		return min(asked, p.MaxSwapSlice)
	}
	return asked
}

// MaxPriorityCaps bounds the per-submitter priority entries.
const MaxPriorityCaps = 1024

// HonouredPriority is the priority this owner gives a job: what its
// submitter asked, capped by the submitter's entry in PriorityCaps or
// else by MaxPriority. A cap never raises a priority.
func (p Policy) HonouredPriority(submitter peer.ID, asked int) int {
	limit := p.MaxPriority
	if c, ok := p.PriorityCaps[submitter]; ok {
		limit = c
	}
	return min(asked, limit)
}

// MaxJobsLimit bounds J: more applications at once than this on one
// machine is a typo.
const MaxJobsLimit = 1024

// MaxHostLabels bounds the labels an owner may set.
const MaxHostLabels = 256

// DefaultPolicy describes this machine with P2P-MPI's usual setting for a
// multi-core host: one application at a time (J = 1, so jobs never compete
// for the cores) with one process per core (P = cores). Three quarters of
// the memory is lent, leaving the rest to the owner. Every submitter not
// denied is accepted.
func DefaultPolicy() Policy {
	cores := runtime.NumCPU()
	mem := int64(min(memory.TotalMemory()/4*3, uint64(proto.MaxSize)))
	return Policy{MaxJobs: 1, MaxProcs: cores, Cores: cores, Memory: mem, OS: runtime.GOOS, Arch: runtime.GOARCH}
}

// Validate checks a policy's bounds; errors name the setting.
func (p Policy) Validate() error {
	switch {
	case p.MaxJobs < 0 || p.MaxJobs > MaxJobsLimit:
		return fmt.Errorf("max-jobs: must be 0..%d, got %d", MaxJobsLimit, p.MaxJobs)
	case p.MaxProcs < 0 || p.MaxProcs > proto.MaxProcs:
		return fmt.Errorf("max-procs: must be 0..%d, got %d", proto.MaxProcs, p.MaxProcs)
	case p.Cores < 0 || p.Cores > proto.MaxCores:
		return fmt.Errorf("cores: must be 0..%d, got %d", proto.MaxCores, p.Cores)
	case p.Memory < 0 || p.Memory > proto.MaxSize:
		return fmt.Errorf("memory: must be 0..%d bytes, got %d", proto.MaxSize, p.Memory)
	case len(p.Labels) > MaxHostLabels:
		return fmt.Errorf("labels: at most %d, got %d", MaxHostLabels, len(p.Labels))
	case len(p.PriorityCaps) > MaxPriorityCaps:
		return fmt.Errorf("priority-cap: at most %d entries, got %d", MaxPriorityCaps, len(p.PriorityCaps))
	}
	if p.MaxSwapSlice < 0 || p.MaxSwapSlice > proto.MaxSwapSlice {
		return fmt.Errorf("max-swap-slice: must be 0..%v, got %v", proto.MaxSwapSlice, p.MaxSwapSlice)
	}
	if p.SwapPolicy != gang.Sequential && p.SwapPolicy != gang.Overlapped {
		return fmt.Errorf("swap-policy: want sequential or overlapped, got %v", p.SwapPolicy)
	}
	if err := proto.CheckPriority(p.MaxPriority); err != nil {
		return fmt.Errorf("max-%w", err)
	}
	for id, c := range p.PriorityCaps {
		if err := proto.CheckPriority(c); err != nil {
			return fmt.Errorf("priority-cap %s: %w", id, err)
		}
	}
	if err := (proto.Requirements{OS: p.OS, Arch: p.Arch}).Validate(); err != nil {
		return err
	}
	for _, l := range p.Labels {
		if err := proto.CheckLabel(l); err != nil {
			return err
		}
	}
	return nil
}

// Usage is what this machine has promised: applications running or
// reserved, and the cores and memory they hold.
type Usage struct {
	Jobs   int
	Cores  int
	Memory int64
}

// Decision is the policy's answer to an advert. When Accept is set the
// worker offers Slots processes (c = min(P, free cores, n)) and holds Cores
// cores and Memory bytes for the job. Reason says why, for logs and for
// `submit --dry-run`.
type Decision struct {
	Accept bool
	Slots  int
	Cores  int
	Memory int64
	Reason string
	// Code and Detail are a refusal's reason as the submitter is told it
	// (proto.DeclineMsg); an empty Code (a malformed request) is not told.
	Code   proto.DeclineCode
	Detail string
	// Full is set on a refusal only for lack of free capacity (J, cores,
	// P, memory in use): the same advert would be accepted on this
	// machine idle. The worker keeps such adverts in its queue and offers
	// when the slots free.
	Full bool
}

// full marks a refusal as one that waiting for free slots may turn into
// an offer.
func full(d Decision) Decision {
	d.Full = true
	return d
}

func refuse(code proto.DeclineCode, detail, format string, a ...any) Decision {
	return Decision{Code: code, Detail: detail, Reason: fmt.Sprintf(format, a...)}
}

// Decide applies the owner policy to an advert from submitter: the
// submitter is not denied (and is allowed, when there is an allow list),
// fewer than J applications are running or reserved, the requirements are
// met, an MPICH job's ranks here can reach its other hosts, and at least
// one process fits. It is a pure function of its arguments.
func Decide(p Policy, u Usage, submitter peer.ID, need proto.Need) Decision {
	if err := need.Validate(); err != nil {
		return refuse("", "", "bad request: %v", err)
	}
	if p.Deny[submitter] {
		return refuse(proto.DeclinePolicy, "", "submitter %s is denied", submitter)
	}
	if p.Allow != nil && !p.Allow[submitter] && (p.Self == "" || submitter != p.Self) {
		return refuse(proto.DeclinePolicy, "", "submitter %s is not in the allow list", submitter)
	}
	if p.IsolatesNetwork && need.PMI && !holdsAll(p, need) {
		return refuse(proto.DeclineNetwork, "job-network=isolated",
			"jobs here see only loopback, and this MPICH job's ranks would be on other hosts too")
	}
	if u.Jobs >= p.MaxJobs {
		d := refuse(proto.DeclineBusy, "", "busy: %d of J=%d applications running or reserved", u.Jobs, p.MaxJobs)
		if p.MaxJobs < 1 || unfit(p, need) {
			return d // never: this owner lends nothing, or not enough
		}
		return full(d)
	}
	if detail, why := unmet(p, need.Req); why != "" {
		return refuse(proto.DeclineRequirement, detail, "%s", why)
	}
	freeCores, freeMem := p.Cores-u.Cores, p.Memory-u.Memory
	if need.Req.MinCores > p.Cores {
		return refuse(proto.DeclineRequirement, fmt.Sprintf("cores=%d", need.Req.MinCores),
			"requires %d cores, %d lent in all", need.Req.MinCores, p.Cores)
	}
	if need.Req.MinCores > freeCores {
		return full(refuse(proto.DeclineRequirement, fmt.Sprintf("cores=%d", need.Req.MinCores),
			"requires %d cores, %d free", need.Req.MinCores, max(freeCores, 0)))
	}
	if need.Req.MinMemory > p.Memory {
		// Never lent: waiting for the jobs here to end does not help.
		return refuse(proto.DeclineRequirement, "mem="+proto.FormatSize(need.Req.MinMemory),
			"requires %s of memory, %s lent in all", proto.FormatSize(need.Req.MinMemory), proto.FormatSize(p.Memory))
	}
	if need.MemPerProc > p.Memory {
		return refuse(proto.DeclineRequirement, "mem-per-proc="+proto.FormatSize(need.MemPerProc),
			"one process declares %s of memory, %s lent in all", proto.FormatSize(need.MemPerProc), proto.FormatSize(p.Memory))
	}
	if need.Req.MinMemory > freeMem {
		return full(refuse(proto.DeclineMemory, "mem="+proto.FormatSize(need.Req.MinMemory),
			"requires %s of memory, %s free", proto.FormatSize(need.Req.MinMemory), proto.FormatSize(max(freeMem, 0))))
	}
	slots := min(p.MaxProcs, freeCores, need.N)
	if slots < 1 {
		d := refuse(proto.DeclineSlots, "", "no free slot: P=%d, %d cores free", p.MaxProcs, max(freeCores, 0))
		if p.MaxProcs < 1 || p.Cores < 1 {
			return d
		}
		return full(d)
	}
	if per := need.MemPerProc; per > 0 {
		slots = min(slots, int(min(max(freeMem, 0)/per, int64(proto.MaxProcs))))
		if slots < 1 {
			return full(refuse(proto.DeclineMemory, "mem-per-proc="+proto.FormatSize(per),
				"one process declares %s of memory, %s free (jobs here hold or use the rest)", proto.FormatSize(per), proto.FormatSize(max(freeMem, 0))))
		}
	}
	return Decision{Accept: true, Slots: slots, Cores: max(slots, need.Req.MinCores),
		Memory: HeldMemory(need, slots), Reason: fmt.Sprintf("offer %d of %d processes", slots, need.N)}
}

// holdsAll reports whether this host could run every process of need
// itself: a job of one process, or one placed on as few hosts as it can
// (not spread) that fits in the slots this host lends.
func holdsAll(p Policy, need proto.Need) bool {
	procs := need.N * need.R
	return procs == 1 || (!need.Spread && procs <= min(p.MaxProcs, p.Cores))
}

// unfit reports whether need could not be offered even with every slot
// free: a requirement the machine lacks, or more cores or memory than it
// lends, or no process slot at all.
func unfit(p Policy, need proto.Need) bool {
	_, why := unmet(p, need.Req)
	return why != "" || need.Req.MinCores > p.Cores || need.Req.MinMemory > p.Memory ||
		need.MemPerProc > p.Memory || p.MaxProcs < 1 || p.Cores < 1
}

// unmet says which fixed requirement (OS, arch, labels) this machine does
// not meet, in --require's syntax and in words, or "", "".
func unmet(p Policy, r proto.Requirements) (detail, why string) {
	if r.OS != "" && r.OS != p.OS {
		return "os=" + r.OS, fmt.Sprintf("requires os=%s, this host is %s", r.OS, p.OS)
	}
	if r.Arch != "" && r.Arch != p.Arch {
		return "arch=" + r.Arch, fmt.Sprintf("requires arch=%s, this host is %s", r.Arch, p.Arch)
	}
	for _, l := range r.Labels {
		if !slices.Contains(p.Labels, l) {
			return "label=" + l, fmt.Sprintf("requires label %q", l)
		}
	}
	return "", ""
}
