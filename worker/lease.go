package worker

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

var log = logging.Logger("zorilla/worker")

// Lease errors.
var (
	ErrNoLease   = errors.New("worker: no such lease") // unknown, released or expired
	ErrWrongJob  = errors.New("worker: lease is for another job")
	ErrLeaseUsed = errors.New("worker: lease already committed (a commit is not taken twice)")
	ErrCapacity  = errors.New("worker: not enough free capacity")
	ErrJobLeased = errors.New("worker: job already holds a lease here")
)

// Lease is a reservation of slots on this machine for one job, made when
// the worker answers an advert with an offer. Until it is committed it
// expires, and its slots come back; once committed it lasts until
// released, when the job's processes are gone.
type Lease struct {
	Key       string // secret: sent only to the submitter, quoted in commit and cancel
	Job       proto.JobID
	Submitter peer.ID
	Slots     int       // processes offered
	Cores     int       // cores held
	Memory    int64     // bytes held
	Expires   time.Time // zero once committed
	Committed bool
	Priority  int // the job's priority as this host honours it (Policy.HonouredPriority)
	// Need is what the advert asked per process and per host, from which
	// Memory was computed (HeldMemory); the commit shrinks Memory to
	// the processes placed here (CommitMemory).
	Need proto.Need
	// Frozen is set while the job's processes here are stopped in place
	// for a job of higher priority: its cores and its place among the J
	// are free, its memory is not.
	Frozen bool
	// Held is set once the submitter kept the offer (MarkHeld): only
	// then may it be asked to give the lease back (askYield).
	Held bool
	// Leaving is set while the job is being swapped out by checkpoint
	// (a swap-out asked and not refused): under the overlapped swap
	// policy (Policy.SwapPolicy) admission counts its place free at once.
	Leaving bool
}

// LeaseConfig configures a lease table.
type LeaseConfig struct {
	// DefaultTTL is a lease's life when Reserve is given 0.
	DefaultTTL time.Duration
	// MaxTTL caps any lease's life before commit; longer asks are cut.
	MaxTTL time.Duration
	// Now is the clock; nil means time.Now. Tests inject one.
	Now func() time.Time
	// NewKey makes a lease's key; nil means 128 random bits. A
	// simulation injects a seeded source so that its runs replay.
	NewKey func() string
}

// DefaultLeaseConfig returns the settings of a real agent.
func DefaultLeaseConfig() LeaseConfig {
	return LeaseConfig{
		// A submitter's default scheduling deadline (2 minutes) and the
		// commit margin: the lease of an advert that says no deadline (an
		// older submitter's) outlives the search of a job left at the
		// default. Adverts that say theirs get leaseTTL's.
		DefaultTTL: 2*time.Minute + commitMargin,
		// 30 minutes: a job may search for hosts for minutes (its
		// scheduling deadline, often 10) while holding early offers, and
		// a lease must outlive that search by the commit margin; longer
		// than half an hour, an idle promise only blocks others (an
		// earlier job can still ask for it back: the yield rule).
		MaxTTL: 30 * time.Minute,
	}
}

func (c LeaseConfig) validate() error {
	if c.DefaultTTL <= 0 || c.MaxTTL < c.DefaultTTL {
		return fmt.Errorf("lease config: need 0 < DefaultTTL <= MaxTTL, got %v and %v", c.DefaultTTL, c.MaxTTL)
	}
	return nil
}

// Leases is this machine's table of leases, checked against the owner
// policy so that the same slots are never promised twice. Expiry is lazy:
// every call first drops the leases whose time has passed, so with an
// injected clock it is exactly reproducible. All methods are safe for
// concurrent use; mu guards every field below it.
type Leases struct {
	now        func() time.Time
	newKey     func() string
	defaultTTL time.Duration
	maxTTL     time.Duration

	// freed is signalled (never blocking, one pending signal at most)
	// whenever slots come back: a lease released, expired or shrunk. The
	// worker's queue of waiting adverts listens to it.
	freed chan struct{}

	mu     sync.Mutex
	policy Policy
	byKey  map[string]*Lease
	byJob  map[proto.JobID]*Lease
	used   map[proto.JobID]int64 // measured memory of committed jobs (SetUsed)
}

// NewLeases returns an empty lease table under policy p.
func NewLeases(p Policy, cfg LeaseConfig) (*Leases, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("lease table: policy: %w", err)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	newKey := cfg.NewKey
	if newKey == nil {
		newKey = newLeaseKey
	}
	return &Leases{now: now, newKey: newKey, defaultTTL: cfg.DefaultTTL, maxTTL: cfg.MaxTTL,
		policy: p, byKey: map[string]*Lease{}, byJob: map[proto.JobID]*Lease{}, used: map[proto.JobID]int64{}, freed: make(chan struct{}, 1)}, nil
}

// SetPolicy replaces the policy (the owner changed a setting or reloaded an
// allow list). Existing leases stay; new ones see the new limits.
func (l *Leases) SetPolicy(p Policy) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("set policy: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.policy = p
	return nil
}

// Policy returns the current policy.
func (l *Leases) Policy() Policy {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.policy
}

// Admit decides on an advert and, when the policy accepts, reserves what
// the decision offers, in one step: two adverts deciding at once cannot
// both count the same free cores. A refusal returns the Decision with its
// reason and no error; an error means the decision accepted but the
// reservation failed (the job already holds a lease here).
func (l *Leases) Admit(submitter peer.ID, need proto.Need, ttl time.Duration) (Decision, Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep()
	d := Decide(l.policy, l.admissionUsage(), submitter, need)
	if !d.Accept {
		return d, Lease{}, nil
	}
	ls, err := l.reserve(need.Job, submitter, d.Slots, d.Cores, d.Memory, ttl)
	if err == nil {
		ls.Priority, ls.Need = l.policy.HonouredPriority(submitter, need.Priority), need
		l.byKey[ls.Key].Priority, l.byKey[ls.Key].Need = ls.Priority, need
	}
	return d, ls, err
}

// Reserve holds slots, cores and memory for a job for ttl (0: the default;
// more than MaxTTL: MaxTTL), under a fresh random key. It fails with
// ErrCapacity when the policy's J, P, cores or memory would be exceeded,
// and with ErrJobLeased when the job already holds a lease here.
func (l *Leases) Reserve(j proto.JobID, submitter peer.ID, slots, cores int, memory int64, ttl time.Duration) (Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep()
	return l.reserve(j, submitter, slots, cores, memory, ttl)
}

func (l *Leases) reserve(j proto.JobID, submitter peer.ID, slots, cores int, memory int64, ttl time.Duration) (Lease, error) {
	if _, err := proto.ParseJobID(string(j)); err != nil {
		return Lease{}, fmt.Errorf("reserve: %w", err)
	}
	if slots < 1 || cores < slots || memory < 0 || ttl < 0 {
		return Lease{}, fmt.Errorf("reserve %s: need slots >= 1, cores >= slots, memory >= 0, ttl >= 0; got %d, %d, %d, %v",
			j, slots, cores, memory, ttl)
	}
	if _, held := l.byJob[j]; held {
		return Lease{}, fmt.Errorf("reserve %s: %w", j, ErrJobLeased)
	}
	if err := fits(l.policy, l.admissionUsage(), slots, cores, memory); err != nil {
		return Lease{}, fmt.Errorf("reserve %s: %w", j, err)
	}
	if ttl == 0 {
		ttl = l.defaultTTL
	}
	ls := &Lease{Key: l.newKey(), Job: j, Submitter: submitter, Slots: slots, Cores: cores,
		Memory: memory, Expires: l.now().Add(min(ttl, l.maxTTL))}
	l.byKey[ls.Key], l.byJob[j] = ls, ls
	return *ls, nil
}

// fits checks one more reservation against the policy's capacity.
func fits(p Policy, u Usage, slots, cores int, memory int64) error {
	switch {
	case u.Jobs+1 > p.MaxJobs:
		return fmt.Errorf("%w: %d of J=%d applications", ErrCapacity, u.Jobs, p.MaxJobs)
	case slots > p.MaxProcs:
		return fmt.Errorf("%w: %d processes, P=%d", ErrCapacity, slots, p.MaxProcs)
	case u.Cores+cores > p.Cores:
		return fmt.Errorf("%w: %d cores asked, %d of %d free", ErrCapacity, cores, p.Cores-u.Cores, p.Cores)
	case !FitsMemory(p.Memory, []MemHold{{Declared: u.Memory}}, memory):
		return fmt.Errorf("%w: %d bytes asked, %d of %d free", ErrCapacity, memory, p.Memory-u.Memory, p.Memory)
	}
	return nil
}

// newLeaseKey returns 128 random bits, URL-safe.
func newLeaseKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails: crypto/rand crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b)
}

// Commit turns a lease into the job's hold on this machine: it stops
// expiring. The key must name a live lease of that job, not yet committed:
// a key is used once, so a replayed commit (a key already used, or
// released) is refused with ErrLeaseUsed or ErrNoLease.
func (l *Leases) Commit(key string, j proto.JobID) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep()
	ls, ok := l.byKey[key]
	if !ok {
		return fmt.Errorf("commit %s: %w", j, ErrNoLease)
	}
	if ls.Job != j {
		return fmt.Errorf("commit %s: %w", j, ErrWrongJob)
	}
	if ls.Committed {
		return fmt.Errorf("commit %s: %w", j, ErrLeaseUsed)
	}
	ls.Committed, ls.Expires = true, time.Time{}
	return nil
}

// Renew keeps what a live lease holds for its job's next start (a retry)
// under a fresh key: it is an offer again, not committed, expiring as the
// job's first offer did (leaseTTL), with the job's priority and need; its
// marks (frozen, leaving, held) and measured memory are gone with the run.
// The slots never come free in between, so no other job takes them; but
// the lease must fit the policy as a new one would (the owner may have
// lowered it), else it ends with ErrCapacity.
func (l *Leases) Renew(key string) (Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep()
	old, ok := l.byKey[key]
	if !ok {
		return Lease{}, fmt.Errorf("renew: %w", ErrNoLease)
	}
	l.remove(old)
	ls, err := l.reserve(old.Job, old.Submitter, old.Slots, old.Cores, old.Memory, leaseTTL(old.Need))
	if err != nil {
		return Lease{}, err
	}
	ls.Priority, ls.Need = old.Priority, old.Need
	l.byKey[ls.Key].Priority, l.byKey[ls.Key].Need = ls.Priority, ls.Need
	return ls, nil
}

// Shrink lowers what a lease holds to what the job uses (a commit that
// places fewer processes than offered); the rest comes back at once. It
// never grows a lease.
func (l *Leases) Shrink(key string, slots, cores int, memory int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep()
	ls, ok := l.byKey[key]
	if !ok {
		return fmt.Errorf("shrink: %w", ErrNoLease)
	}
	if slots < 1 || cores < slots || memory < 0 || slots > ls.Slots || cores > ls.Cores || memory > ls.Memory {
		return fmt.Errorf("shrink %s: %d slots, %d cores, %d bytes do not fit in the lease's %d, %d, %d",
			ls.Job, slots, cores, memory, ls.Slots, ls.Cores, ls.Memory)
	}
	if slots < ls.Slots || cores < ls.Cores || memory < ls.Memory {
		l.signalFreed()
	}
	ls.Slots, ls.Cores, ls.Memory = slots, cores, memory
	return nil
}

// End ends a lease (a cancel, a commit elsewhere, or the end of the
// job) and returns what it held.
func (l *Leases) End(key string) (Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep()
	ls, ok := l.byKey[key]
	if !ok {
		return Lease{}, fmt.Errorf("release: %w", ErrNoLease)
	}
	l.remove(ls)
	return *ls, nil
}

// Get returns a live lease by key.
func (l *Leases) Get(key string) (Lease, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep()
	ls, ok := l.byKey[key]
	if !ok {
		return Lease{}, false
	}
	return *ls, true
}

// ByJob returns the live lease a job holds here.
func (l *Leases) ByJob(j proto.JobID) (Lease, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep()
	ls, ok := l.byJob[j]
	if !ok {
		return Lease{}, false
	}
	return *ls, true
}

// Runs says whether job j runs here: its lease is committed. An offer
// (an uncommitted lease) is not a run: the job may still give it back.
func (l *Leases) Runs(j proto.JobID) bool {
	ls, ok := l.ByJob(j)
	return ok && ls.Committed
}

// Usage is what the live leases hold; it feeds Decide.
func (l *Leases) Usage() Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep()
	return l.usage()
}

// List returns the live leases, ordered by job.
func (l *Leases) List() []Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep()
	out := make([]Lease, 0, len(l.byKey))
	for _, ls := range l.byKey {
		out = append(out, *ls)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Job < out[j].Job })
	return out
}

func (l *Leases) usage() Usage { return l.usageOf(false) }

// usageOf is what the live leases hold, those Leaving left out with
// skipLeaving.
func (l *Leases) usageOf(skipLeaving bool) Usage {
	var u Usage
	holds := make([]MemHold, 0, len(l.byKey))
	for _, ls := range l.byKey {
		if skipLeaving && ls.Leaving {
			continue
		}
		if !ls.Frozen {
			u.Jobs++
			u.Cores += ls.Cores
		}
		holds = append(holds, MemHold{Declared: ls.Memory, Used: l.used[ls.Job]})
	}
	u.Memory = MemoryHeld(holds)
	return u
}
