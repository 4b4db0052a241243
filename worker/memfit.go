package worker

import (
	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// MemHold is one job's memory on this host: what its lease holds (the
// job's declaration, HeldMemory) and what its processes were last
// measured using (the cgroup's memory.current, or the sum of VmRSS).
type MemHold struct {
	Declared int64
	Used     int64
}

// Charge is what the job counts against the owner's --memory: the more
// of what it declared and what it uses. A job that uses more than it
// declared is charged for it, so the host takes no other job into memory
// that is not there; one that uses less keeps its declaration.
func (h MemHold) Charge() int64 { return max(h.Declared, h.Used, 0) }

// MemoryHeld is the sum of the holds' charges, saturating at proto.MaxSize.
func MemoryHeld(holds []MemHold) int64 {
	var sum int64
	for _, h := range holds {
		sum = min(sum+h.Charge(), proto.MaxSize)
	}
	return sum
}

// FitsMemory is co-scheduling's test on memory: a job declaring add more
// bytes may join the holds only while every job's charge plus add fits in
// what the owner lends. It is used by admission (Decide, through
// Usage.Memory), by the lease table's reservations, and by the preemption
// plan, and it is gang.Fits, the hybrid technique's test of which jobs
// may be in memory together, over the jobs' charges. An owner lending
// nothing (lent <= 0, which gang.Fits reads as no bound) takes nothing.
func FitsMemory(lent int64, holds []MemHold, add int64) bool {
	if add < 0 {
		return false
	}
	if lent <= 0 {
		return add == 0 && MemoryHeld(holds) == 0
	}
	mems := make([]int64, 0, len(holds)+1)
	for _, h := range holds {
		mems = append(mems, h.Charge())
	}
	return gang.Fits(lent, append(mems, add)...)
}
