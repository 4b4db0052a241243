package worker

import (
	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// What the lease table keeps of the runs of committed jobs besides their
// holds: a job being swapped out (Leaving), frozen in place (Frozen), the
// memory it was measured using, and its memory lowered to the processes
// the commit placed here.

// admissionUsage is the usage a new job is admitted against: all of it,
// except that under the overlapped swap policy a job being swapped out
// (Lease.Leaving) holds nothing, so the jobs it gives way to restart
// while it checkpoints (the seed's Figure 5: a shorter switch, both sets
// briefly in memory). Under the sequential policy they wait until its
// lease ends, its memory free.
func (l *Leases) admissionUsage() Usage {
	return l.usageOf(l.policy.SwapPolicy == gang.Overlapped)
}

// SetLeaving marks a lease as being swapped out by checkpoint, or no
// longer (the swap was refused); false when the lease is gone.
func (l *Leases) SetLeaving(key string, leaving bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.byKey[key]
	if !ok {
		return false
	}
	if leaving && !ls.Leaving && l.policy.SwapPolicy == gang.Overlapped {
		l.signalFreed() // the line may offer its place at once
	}
	ls.Leaving = leaving
	return true
}

// CommitMemory lowers the memory a committed lease holds to what the
// procs processes placed here declare (HeldMemory): an offer of c
// processes at MemPerProc each, of which the plan used fewer, gives the
// rest back for other jobs. Slots and cores stay, for a retry on the
// same lease. A lease without a per-process declaration is left alone.
func (l *Leases) CommitMemory(key string, procs int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.byKey[key]
	if !ok || ls.Need.MemPerProc == 0 {
		return
	}
	if m := HeldMemory(ls.Need, procs); m < ls.Memory {
		ls.Memory = m
		l.signalFreed()
	}
}

// SetFrozen marks a lease frozen (its job stopped in place) or not; false
// when there is no such lease.
func (l *Leases) SetFrozen(key string, frozen bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.byKey[key]
	if !ok {
		return false
	}
	if frozen && !ls.Frozen {
		l.signalFreed()
	}
	ls.Frozen = frozen
	return true
}

// FitsThawed says whether the frozen lease key may run again: its cores
// and its place among the J fit beside the others.
func (l *Leases) FitsThawed(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.byKey[key]
	if !ok || !ls.Frozen {
		return false
	}
	u := l.usage()
	return u.Jobs+1 <= l.policy.MaxJobs && u.Cores+ls.Cores <= l.policy.Cores
}

// MemHold is what job j holds and was last measured using here.
func (l *Leases) MemHold(j proto.JobID) MemHold {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := MemHold{Used: l.used[j]}
	if ls, ok := l.byJob[j]; ok {
		h.Declared = ls.Memory
	}
	return h
}

// SetUsed records the memory a job's processes here were last measured
// using (worker/memuse.go); from then on the job is charged the more of
// that and what its lease holds (MemHold.Charge). A job without a lease
// here is ignored.
func (l *Leases) SetUsed(j proto.JobID, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.byJob[j]; !ok {
		return
	}
	if bytes = max(bytes, 0); bytes < l.used[j] {
		l.signalFreed() // a job using less may let a waiting one in
	}
	l.used[j] = bytes
}
